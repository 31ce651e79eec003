// RULE: many host threads mapping, launching and unmapping at once keep the one mapping table consistent: every thread's results are right and nothing stays mapped
// EXPECT: errors=0 leftover=0 shared_present=0
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4
#define ITERATIONS 300
#define N 64

int main(void) {
  int shared[N];
  for (int i = 0; i < N; i++) shared[i] = i;
  int errors = 0, leftover = 0;
#pragma omp parallel num_threads(THREADS) reduction(+ : errors, leftover)
  {
    int t = omp_get_thread_num();
    int *mine = malloc(N * sizeof(int));
    for (int it = 0; it < ITERATIONS; it++) {
      for (int i = 0; i < N; i++) mine[i] = t * 1000 + i;
      /* Shared read-only data: every thread raises and drops its count. */
#pragma omp target enter data map(to: shared)
#pragma omp target data map(tofrom: mine[0:N])
      {
#pragma omp target map(always, to: shared) map(present, alloc: mine[0:N])
        for (int i = 0; i < N; i++) mine[i] += shared[i] + it;
#pragma omp target update from(mine[0:N / 2])
        if (mine[1] != t * 1000 + 1 + 1 + it) errors++;
      }
#pragma omp target exit data map(release: shared)
      for (int i = 0; i < N; i++)
        if (mine[i] != t * 1000 + i + i + it) errors++;
      if (omp_target_is_present(mine, omp_get_default_device())) leftover++;
    }
    free(mine);
  }
  int shared_present = omp_target_is_present(shared, omp_get_default_device());
  printf("errors=%d leftover=%d shared_present=%d\n", errors, leftover, shared_present);
  return !(errors == 0 && leftover == 0 && shared_present == 0);
}
