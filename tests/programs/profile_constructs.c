// A program for the LIBOMPTARGET_PROFILE tests: a data region with a region and an update inside
// on device 0, then nowait regions from two threads on devices 0 and 1.
#include <omp.h>
#include <stdio.h>

#define N 4096

int main(void) {
  static double a[N], b[N];
  for (int i = 0; i < N; i++)
    a[i] = i;
#pragma omp target data map(to : a) map(from : b) device(0)
  {
#pragma omp target device(0)
    for (int i = 0; i < N; i++)
      b[i] = 2 * a[i];
#pragma omp target update from(b) device(0)
  }
  int done[2] = {0, 0};
#pragma omp parallel num_threads(2)
  {
    int t = omp_get_thread_num(), x = 0;
#pragma omp target map(tofrom : x) device(t) nowait
    x = 1;
#pragma omp taskwait
    done[t] = x;
  }
  int ok = b[N - 1] == 2.0 * (N - 1) && done[0] && done[1];
  printf("profile program %s\n", ok ? "ok" : "WRONG");
  return !ok;
}
