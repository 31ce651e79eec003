// Shared by the benchmark programs: a monotonic clock and the result line the runner reads.
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

// One measurement: `RESULT name value unit`, parsed by bench/src.
static inline void result(const char *name, double value, const char *unit) {
  printf("RESULT %s %.6g %s\n", name, value, unit);
  fflush(stdout);
}

static inline long arg_or(int argc, char **argv, int i, long fallback) {
  return argc > i ? atol(argv[i]) : fallback;
}

// N arrays of `len` ints, each a separate allocation (as a program's separate variables are),
// holding 0, 1, ...: the data of the mapping benchmarks and diagnostics.
static inline int **new_arrays(long n, int len) {
  int **arrays = malloc(n * sizeof *arrays);
  for (long i = 0; i < n; i++) {
    arrays[i] = malloc(len * sizeof(int));
    for (int j = 0; j < len; j++) arrays[i][j] = j;
  }
  return arrays;
}
