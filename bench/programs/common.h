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
