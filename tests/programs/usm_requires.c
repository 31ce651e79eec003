// A program that requires unified shared memory: its kernel writes host memory it never
// maps. Where the device cannot reach pageable memory, the kernel faults.
#include <stdio.h>
#include <stdlib.h>

#pragma omp requires unified_shared_memory

#define N 100000

int main(void) {
  int *a = malloc(N * sizeof(int));
  if (!a)
    return 2;
#pragma omp target teams distribute parallel for
  for (int i = 0; i < N; i++)
    a[i] = i;
  int bad = 0;
  for (int i = 0; i < N; i++)
    bad += a[i] != i;
  printf("%s\n", bad ? "FAIL" : "PASS");
  free(a);
  return bad != 0;
}
