// Two host threads share one array on a device whose queues run asynchronously. One thread
// maps it with `target enter data` (its copy runs on that construct's queue); the other finds
// it in the table as soon as it is there and reads it in a kernel on another queue. The
// reader must wait for the copy (LLVM's per-mapping event): without that its kernel runs
// while the copy is still under way and reads memory the copy has not reached yet.
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define N (16L << 20) // ints: 64 MiB, a copy of several milliseconds
static int *data;
static volatile int go;

static void *map_it(void *unused) {
  (void)unused;
  while (!go)
    ;
#pragma omp target enter data map(to : data[0:N])
  return 0;
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 10;
  data = malloc(N * sizeof *data);
  for (long i = 0; i < N; i++)
    data[i] = 7;
  int stale = 0;
  for (int r = 0; r < rounds; r++) {
    pthread_t t;
    go = 0;
    pthread_create(&t, 0, map_it, 0);
    go = 1;
    while (!omp_target_is_present(data, 0))
      ; // the mapping is in the table: its copy has been queued
    int first = -1, last = -1;
#pragma omp target map(alloc : data[0:N]) map(from : first, last)
    {
      first = data[0];
      last = data[N - 1];
    }
    if (first != 7 || last != 7)
      stale++;
    pthread_join(t, 0);
#pragma omp target exit data map(delete : data[0:N])
  }
  printf("stale reads: %d of %d\n", stale, rounds);
  free(data);
  return stale != 0;
}
