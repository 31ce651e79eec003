// One kind of construct, repeated: `per_construct KIND N`. Run under the emulated CUDA driver
// with OMPTARGET_EMU_TRACE, the difference between N = 101 and N = 1 over 100 is the driver
// calls one construct costs (scripts/emu-driver-calls.sh). On a GPU, the difference in wall time
// over 20000 is the time one construct takes (scripts/gpu-run.sh's run.sh).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIZE 1024

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: per_construct empty|map_to|map_tofrom|enter_exit|update|nowait|data_nowait N\n");
    return 2;
  }
  const char *kind = argv[1];
  int n = atoi(argv[2]);
  static double a[SIZE];
  double sum = 0;
  // Start the device and load the image outside the counted constructs.
#pragma omp target map(tofrom : sum)
  sum = 0;
  for (int i = 0; i < n; i++) {
    if (!strcmp(kind, "empty")) {
#pragma omp target
      {}
    } else if (!strcmp(kind, "map_to")) {
#pragma omp target map(to : a[0:SIZE]) map(tofrom : sum)
      sum += a[i % SIZE];
    } else if (!strcmp(kind, "map_tofrom")) {
#pragma omp target map(tofrom : a[0:SIZE])
      a[i % SIZE] += 1;
    } else if (!strcmp(kind, "enter_exit")) {
#pragma omp target enter data map(to : a[0:SIZE])
#pragma omp target exit data map(release : a[0:SIZE])
    } else if (!strcmp(kind, "update")) {
      if (i == 0) {
#pragma omp target enter data map(alloc : a[0:SIZE])
      }
#pragma omp target update to(a[0:SIZE])
    } else if (!strcmp(kind, "nowait")) {
#pragma omp target map(tofrom : a[0:SIZE]) nowait
      a[i % SIZE] += 1;
#pragma omp taskwait
    } else if (!strcmp(kind, "data_nowait")) {
#pragma omp target enter data map(to : a[0:SIZE]) nowait
#pragma omp taskwait
#pragma omp target exit data map(release : a[0:SIZE]) nowait
#pragma omp taskwait
    } else {
      fprintf(stderr, "unknown kind %s\n", kind);
      return 2;
    }
  }
  printf("%s %d done\n", kind, n);
  return 0;
}
