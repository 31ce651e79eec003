// The data of the mapping benchmark and its diagnostics: N small arrays, each a separate
// allocation (as a program's separate variables are), mapped one construct each.
#include "common.h"

// N arrays of `len` ints holding 0, 1, ...
static inline int **new_arrays(long n, int len) {
  int **arrays = malloc(n * sizeof *arrays);
  for (long i = 0; i < n; i++) {
    arrays[i] = malloc(len * sizeof(int));
    for (int j = 0; j < len; j++) arrays[i][j] = j;
  }
  return arrays;
}

// Loads the program's image on the device before anything is timed.
static inline void load_image(void) {
  int warm = 0;
#pragma omp target map(tofrom: warm)
  warm = 1;
}

// One `target enter data` per array.
static inline void enter_arrays(int **arrays, long n, int len) {
  for (long i = 0; i < n; i++) {
    int *a = arrays[i];
#pragma omp target enter data map(to: a[0:len])
  }
}

// One `target exit data` per array, copying each back.
static inline void exit_arrays(int **arrays, long n, int len) {
  for (long i = 0; i < n; i++) {
    int *a = arrays[i];
#pragma omp target exit data map(from: a[0:len])
  }
}
