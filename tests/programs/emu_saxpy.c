// A small program for the emulated GPU drivers: data in and out, a team-parallel kernel, a
// serial kernel with a reduction-like sum, a declare-target global written on the device, and
// an asynchronous region. Prints its results and exits non-zero when they are wrong.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#pragma omp declare target
int counter = 5;
#pragma omp end declare target

int main(void) {
  int n = 4096;
  double a = 2.0, sum = 0;
  double *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
  for (int i = 0; i < n; i++) {
    x[i] = i;
    y[i] = 1;
  }
#pragma omp target teams distribute parallel for map(to : x[0:n]) map(tofrom : y[0:n])
  for (int i = 0; i < n; i++)
    y[i] += a * x[i];
#pragma omp target teams distribute parallel for reduction(+ : sum) map(to : y[0:n])
  for (int i = 0; i < n; i++)
    sum += y[i];
#pragma omp target
  counter += 1;
  int c = 0;
#pragma omp target map(from : c)
  c = counter;
  double z[64];
#pragma omp target map(from : z) nowait
  for (int i = 0; i < 64; i++)
    z[i] = i * 0.5;
#pragma omp taskwait
  int ok = sum == n + a * (double)(n - 1) * n / 2 && c == 6 && z[63] == 31.5;
  printf("sum=%.1f counter=%d z63=%.1f %s\n", sum, c, z[63], ok ? "ok" : "WRONG");
  free(x);
  free(y);
  return !ok;
}
