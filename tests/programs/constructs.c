// Every construct the foundation supports, checked against host-computed results.
// EXPECT: num_devices 4
// EXPECT: constructs ok
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#pragma omp declare target
int counter = 100;
double table[8] = {1, 2, 3, 4, 5, 6, 7, 8};
#pragma omp end declare target

static int failures = 0;
#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      printf("FAIL line %d: ", __LINE__);                                      \
      printf(__VA_ARGS__);                                                     \
      printf("\n");                                                            \
      failures++;                                                              \
    }                                                                          \
  } while (0)

int main(void) {
  int ndev = omp_get_num_devices();
  printf("num_devices %d\n", ndev);
  CHECK(ndev >= 1, "no devices");

  // target with scalars by value and by reference; omp_is_initial_device on the device
  int on_host = -1, x = 41;
  double scale = 2.5, out = 0;
#pragma omp target map(from : on_host, out) map(tofrom : x)
  {
    on_host = omp_is_initial_device();
    x += 1;
    out = scale * 4;
  }
  CHECK(on_host == 0, "omp_is_initial_device in region = %d", on_host);
  CHECK(x == 42 && out == 10.0, "x=%d out=%f", x, out);

  // teams distribute parallel for over a mapped array
  enum { N = 10000 };
  double *a = malloc(N * sizeof(double)), *b = malloc(N * sizeof(double));
  for (int i = 0; i < N; i++) { a[i] = i; b[i] = 0; }
#pragma omp target teams distribute parallel for map(to : a[0:N]) map(from : b[0:N])
  for (int i = 0; i < N; i++) b[i] = 2 * a[i] + 1;
  int bad = 0;
  for (int i = 0; i < N; i++) bad += b[i] != 2 * i + 1;
  CHECK(bad == 0, "%d wrong elements after teams distribute parallel for", bad);

  // target data region with nested target regions and target update
  for (int i = 0; i < N; i++) a[i] = 1;
#pragma omp target data map(tofrom : a[0:N])
  {
#pragma omp target teams distribute parallel for
    for (int i = 0; i < N; i++) a[i] += 1;
    // host copy still holds 1 until updated
    CHECK(a[0] == 1, "host copy changed inside target data: %f", a[0]);
#pragma omp target update from(a[0:N])
    CHECK(a[N - 1] == 2, "target update from: %f", a[N - 1]);
    for (int i = 0; i < N; i++) a[i] = 10;
#pragma omp target update to(a[0:N])
#pragma omp target teams distribute parallel for
    for (int i = 0; i < N; i++) a[i] *= 3;
  }
  CHECK(a[0] == 30 && a[N - 1] == 30, "after target data: %f %f", a[0], a[N - 1]);

  // enter / exit data, with a present lookup in between
  for (int i = 0; i < N; i++) b[i] = i;
#pragma omp target enter data map(to : b[0:N])
  CHECK(omp_target_is_present(b, omp_get_default_device()), "not present after enter data");
#pragma omp target map(present, alloc : b[0:N])
  for (int i = 0; i < N; i++) b[i] = -b[i];
#pragma omp target exit data map(from : b[0:N])
  CHECK(b[5] == -5, "enter/exit data: %f", b[5]);
  CHECK(!omp_target_is_present(b, omp_get_default_device()), "still present after exit data");

  // declare target globals: device copies, explicit updates
#pragma omp target
  {
    counter += 1;
    table[0] = 42;
  }
  CHECK(counter == 100, "host counter changed without update: %d", counter);
#pragma omp target update from(counter, table)
  CHECK(counter == 101 && table[0] == 42, "declare target: %d %f", counter, table[0]);
  counter = 7;
#pragma omp target update to(counter)
  int seen = 0;
#pragma omp target map(from : seen)
  seen = counter;
  CHECK(seen == 7, "declare target update to: %d", seen);

  // device memory API
  int dev = omp_get_default_device(), host = omp_get_initial_device();
  CHECK(host == ndev, "initial device %d", host);
  int *d = omp_target_alloc(N * sizeof(int), dev);
  CHECK(d != NULL, "omp_target_alloc");
  int *h = malloc(N * sizeof(int)), *back = malloc(N * sizeof(int));
  for (int i = 0; i < N; i++) h[i] = i * 3;
  CHECK(omp_target_memcpy(d, h, N * sizeof(int), 0, 0, dev, host) == 0, "memcpy to device");
#pragma omp target is_device_ptr(d)
  for (int i = 0; i < N; i++) d[i] += 1;
  CHECK(omp_target_memcpy(back, d, N * sizeof(int), 0, 0, host, dev) == 0, "memcpy from device");
  bad = 0;
  for (int i = 0; i < N; i++) bad += back[i] != i * 3 + 1;
  CHECK(bad == 0, "%d wrong after omp_target_memcpy round trip", bad);
  // device to device, with offsets
  if (ndev > 1) {
    int *d1 = omp_target_alloc(N * sizeof(int), 1);
    CHECK(omp_target_memcpy(d1, d, 16 * sizeof(int), 4 * sizeof(int), 0, 1, dev) == 0, "memcpy dev->dev");
    CHECK(omp_target_memcpy(back, d1, sizeof(int), 0, 5 * sizeof(int), host, 1) == 0, "memcpy back");
    CHECK(back[0] == 1 * 3 + 1, "device to device: %d", back[0]);
    omp_target_free(d1, 1);
  }
  omp_target_free(d, dev);

  // device(n) clauses on every device: each device has its own copy of globals
  for (int n = 0; n < ndev; n++) {
    int who = -1;
#pragma omp target device(n) map(from : who)
    {
      counter = 1000 + n;
      who = omp_is_initial_device();
    }
    CHECK(who == 0, "device %d ran on host", n);
  }
  for (int n = 0; n < ndev; n++) {
    int v = -1;
#pragma omp target device(n) map(from : v)
    v = counter;
    CHECK(v == 1000 + n, "device %d global copy holds %d", n, v);
  }

  free(a); free(b); free(h); free(back);
  if (failures == 0) printf("constructs ok\n");
  return failures != 0;
}
