// Maps two arrays of 8 MiB to device 0 with map clauses, `target data` and `target update`,
// and checks the results: on a device whose maps are zero-copy no byte of them is copied,
// elsewhere each is copied. Also reports what omp_target_is_accessible answers for them.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define N (1 << 20)

int main(void) {
  double *a = malloc(N * sizeof(double));
  double *b = malloc(N * sizeof(double));
  if (!a || !b)
    return 2;
  for (int i = 0; i < N; i++) {
    a[i] = i;
    b[i] = -1;
  }
#pragma omp target teams distribute parallel for map(to : a[:N]) map(tofrom : b[:N])
  for (int i = 0; i < N; i++)
    b[i] = 2 * a[i];
#pragma omp target data map(tofrom : b[:N])
  {
#pragma omp target teams distribute parallel for
    for (int i = 0; i < N; i++)
      b[i] += 1;
#pragma omp target update from(b[:N])
  }
  int bad = 0;
  for (int i = 0; i < N; i++)
    bad += b[i] != 2.0 * i + 1;
  printf("accessible: %d\n", omp_target_is_accessible(a, N * sizeof(double), 0));
  printf("%s\n", bad ? "FAIL" : "PASS");
  free(a);
  free(b);
  return bad != 0;
}
