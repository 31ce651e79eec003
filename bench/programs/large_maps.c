// One host thread maps and unmaps a 256 MiB array (enter data to, exit data from) in a loop
// while another runs small target regions on the same device: the small regions' throughput
// beside the large transfers, against their throughput alone. A runtime that holds its mapping
// table while data moves stalls the small regions for each whole transfer.
#include "common.h"
#include <pthread.h>
#include <stdatomic.h>

static atomic_int stop, started;
static long elements;

static void *map_and_unmap(void *arg) {
  int *big = arg;
  long cycles = 0;
  while (!atomic_load(&stop)) {
#pragma omp target enter data map(to: big[0:elements])
    atomic_store(&started, 1);
#pragma omp target exit data map(from: big[0:elements])
    cycles++;
  }
  return (void *)cycles;
}

// Small regions for `seconds`: regions per second.
static double small_regions(double seconds) {
  int x[4] = {0};
  long ops = 0;
  double t0 = now_ns(), end = t0 + seconds * 1e9, t1;
  while ((t1 = now_ns()) < end) {
    for (int k = 0; k < 64; k++) {
#pragma omp target map(tofrom: x)
      x[k & 3]++;
    }
    ops += 64;
  }
  if (x[0] + x[1] + x[2] + x[3] != ops) exit(1);
  return ops / ((t1 - t0) / 1e9);
}

int main(int argc, char **argv) {
  long mib = arg_or(argc, argv, 1, 256);
  double seconds = arg_or(argc, argv, 2, 400) / 1e3;
  // Each measurement is short and this machine is shared: phases repeat in turn and each keeps
  // its best, as threads.c does.
  long reps = arg_or(argc, argv, 3, 3);
  elements = mib * (1L << 20) / sizeof(int);
  int *big = malloc(elements * sizeof(int));
  if (!big) return 2;
  for (long i = 0; i < elements; i++) big[i] = (int)i;
  double alone = 0, beside = 0, cycles_per_s = 0;
  for (long r = 0; r < reps; r++) {
    double a = small_regions(seconds);
    alone = a > alone ? a : alone;
    atomic_store(&stop, 0);
    atomic_store(&started, 0);
    pthread_t t;
    pthread_create(&t, 0, map_and_unmap, big);
    while (!atomic_load(&started)) {
    }
    double t0 = now_ns();
    double b = small_regions(seconds);
    atomic_store(&stop, 1);
    void *cycles;
    pthread_join(t, &cycles);
    double c = (long)cycles / ((now_ns() - t0) / 1e9);
    beside = b > beside ? b : beside;
    cycles_per_s = c > cycles_per_s ? c : cycles_per_s;
  }
  for (long i = 0; i < elements; i += 4099)
    if (big[i] != (int)i) return 3;
  result("large_maps_small_alone", alone, "ops/s");
  result("large_maps_small_beside", beside, "ops/s");
  result("large_maps_kept", beside / alone, "x");
  result("large_maps_cycles", cycles_per_s, "1/s");
  return 0;
}
