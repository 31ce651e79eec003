// Exercises an offload plugin the way ordinary OpenMP programs do: a kernel with mapped
// arrays, data kept on the device between constructs, a `declare target` global, a kernel
// with many arguments, device memory from omp_target_alloc, and concurrent `nowait` regions
// on every device. Prints one line per check and exits non-zero when any result is wrong.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define N 100000
#define CHUNKS 4

int counter = 0;
#pragma omp declare target(counter)

static int saxpy(void) {
  float *x = malloc(N * sizeof(float)), *y = malloc(N * sizeof(float));
  const float a = 3.0f;
  for (int i = 0; i < N; i++) { x[i] = (float)i; y[i] = 1.0f; }
  int on_host = 1;
#pragma omp target teams distribute parallel for map(to : x[0:N]) map(tofrom : y[0:N]) map(tofrom : on_host)
  for (int i = 0; i < N; i++) {
    if (i == 0) on_host = omp_is_initial_device();
    y[i] = a * x[i] + y[i];
  }
  int bad = on_host;
  for (int i = 0; i < N; i++) bad += y[i] != a * (float)i + 1.0f;
  printf("saxpy: %s\n", bad ? "WRONG" : "ok");
  free(x); free(y);
  return bad != 0;
}

static int data_region(void) {
  int *v = malloc(N * sizeof(int));
  for (int i = 0; i < N; i++) v[i] = i;
#pragma omp target enter data map(to : v[0:N])
  for (int i = 0; i < N; i++) v[i] = -1; // the device copy is untouched by this
#pragma omp target teams distribute parallel for
  for (int i = 0; i < N; i++) v[i] *= 2; // v is present: no copies here
#pragma omp target update from(v[0:N / 2])
  int bad = 0;
  for (int i = 0; i < N; i++) bad += v[i] != (i < N / 2 ? 2 * i : -1);
#pragma omp target teams distribute parallel for
  for (int i = 0; i < N; i++) v[i] += 1;
#pragma omp target exit data map(from : v[0:N])
  for (int i = 0; i < N; i++) bad += v[i] != 2 * i + 1;
  printf("enter/exit data: %s\n", bad ? "WRONG" : "ok");
  free(v);
  return bad != 0;
}

static int global(void) {
  for (int k = 1; k <= 3; k++) {
#pragma omp target map(to : k)
    counter += 5 * k;
  }
  int host_view = counter; // not updated yet: the device has its own copy
#pragma omp target update from(counter)
  printf("declare target: counter=%d host-before-update=%d\n", counter, host_view);
  return counter != 30 || host_view != 0;
}

static int many_arguments(void) {
  long a = 1, b = 2, c = 3, d = 4, e = 5, f = 6, g = 7, h = 8, i = 9, j = 10, sum = 0;
#pragma omp target map(tofrom : sum) map(to : a, b, c, d, e, f, g, h, i, j)
  sum = a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + 7 * g + 8 * h + 9 * i + 10 * j;
  printf("many arguments: sum=%ld\n", sum);
  return sum != 385;
}

static int device_memory_api(void) {
  int dev = omp_get_default_device(), host = omp_get_initial_device();
  int in[64], out[64];
  for (int i = 0; i < 64; i++) in[i] = i * i;
  int *d = omp_target_alloc(sizeof in, dev);
  int bad = d == NULL;
  bad += omp_target_memcpy(d, in, sizeof in, 0, 0, dev, host) != 0;
#pragma omp target is_device_ptr(d) device(dev)
  for (int i = 0; i < 64; i++) d[i] += 1;
  bad += omp_target_memcpy(out, d, sizeof out, 0, 0, host, dev) != 0;
  for (int i = 0; i < 64; i++) bad += out[i] != i * i + 1;
  omp_target_free(d, dev);
  printf("omp_target_alloc/memcpy: %s\n", bad ? "WRONG" : "ok");
  return bad != 0;
}

static int nowait_regions(void) {
  int devices = omp_get_num_devices();
  static double data[CHUNKS][N];
  for (int c = 0; c < CHUNKS; c++)
    for (int i = 0; i < N; i++) data[c][i] = c;
  for (int c = 0; c < CHUNKS; c++) {
    double *chunk = data[c];
#pragma omp target teams distribute parallel for nowait map(tofrom : chunk[0:N]) device(c % devices)
    for (int i = 0; i < N; i++) chunk[i] = chunk[i] * 10 + i % 7;
  }
#pragma omp taskwait
  int bad = 0;
  for (int c = 0; c < CHUNKS; c++)
    for (int i = 0; i < N; i++) bad += data[c][i] != c * 10 + i % 7;
  printf("nowait on %d devices: %s\n", devices, bad ? "WRONG" : "ok");
  return bad != 0;
}

int main(void) {
  int failures = 0;
  failures += saxpy();
  failures += data_region();
  failures += global();
  failures += many_arguments();
  failures += device_memory_api();
  failures += nowait_regions();
  printf("failures: %d\n", failures);
  return failures != 0;
}
