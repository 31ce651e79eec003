// y = a*x + y on an offload device, checked on the host.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  const int n = 1 << 20;
  const float a = 2.0f;
  float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
  for (int i = 0; i < n; i++) { x[i] = (float)i; y[i] = 1.0f; }

  int on_host = 1;
#pragma omp target teams distribute parallel for map(to : x[0:n]) map(tofrom : y[0:n]) map(tofrom : on_host)
  for (int i = 0; i < n; i++) {
    if (i == 0) on_host = omp_is_initial_device();
    y[i] = a * x[i] + y[i];
  }

  int errors = 0;
  for (int i = 0; i < n; i++) errors += y[i] != a * (float)i + 1.0f;
  printf("saxpy on %s (device %d of %d): %s\n", on_host ? "the host" : "an offload device",
         omp_get_default_device(), omp_get_num_devices(), errors ? "WRONG" : "correct");
  free(x); free(y);
  return errors != 0;
}
