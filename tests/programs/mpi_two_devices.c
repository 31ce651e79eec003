// Two remote devices of two device processes at once: each fills its array in a nowait region
// (the two run together), then the first array is copied device to device into the second
// device's memory with omp_target_memcpy, and the second device checks it.
// Run with two device processes of two host devices each: device 1 is the first process's
// second device, device 2 the second process's first.
// EXPECT: two remote devices: correct
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define N (1 << 20)

int main(void) {
  const int a = 1, b = 2;
  if (omp_get_num_devices() != 4) {
    printf("expected 4 devices, got %d\n", omp_get_num_devices());
    return 1;
  }
  int *on_a = omp_target_alloc(N * sizeof(int), a);
  int *on_b = omp_target_alloc(N * sizeof(int), b);
  int *copy = omp_target_alloc(N * sizeof(int), b);
  if (!on_a || !on_b || !copy)
    return 2;
#pragma omp target teams distribute parallel for is_device_ptr(on_a) device(a) nowait
  for (int i = 0; i < N; i++)
    on_a[i] = 3 * i;
#pragma omp target teams distribute parallel for is_device_ptr(on_b) device(b) nowait
  for (int i = 0; i < N; i++)
    on_b[i] = -i;
#pragma omp taskwait
  if (omp_target_memcpy(copy, on_a, N * sizeof(int), 0, 0, b, a))
    return 3;
  long wrong = 0;
#pragma omp target teams distribute parallel for is_device_ptr(copy, on_b) device(b) \
    reduction(+ : wrong) map(tofrom : wrong)
  for (int i = 0; i < N; i++)
    wrong += (copy[i] != 3 * i) + (on_b[i] != -i);
  omp_target_free(on_a, a);
  omp_target_free(on_b, b);
  omp_target_free(copy, b);
  printf("two remote devices: %s\n", wrong ? "wrong" : "correct");
  return wrong != 0;
}
