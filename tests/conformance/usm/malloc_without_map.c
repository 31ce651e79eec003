// RULE: with requires unified_shared_memory a kernel dereferences a malloc'd pointer that was never mapped
// NOT-ON-MPI: unified shared memory: a remote device cannot read the program's memory
// EXPECT: p[0]=0 p[99]=198 sum=9900
#pragma omp requires unified_shared_memory
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  int *p = (int *)malloc(100 * sizeof(int));
  for (int i = 0; i < 100; i++) p[i] = i;
  int sum = 0;
#pragma omp target map(tofrom: sum)
  for (int i = 0; i < 100; i++) { p[i] *= 2; sum += p[i]; }
  printf("p[0]=%d p[99]=%d sum=%d\n", p[0], p[99], sum);
  int ok = sum == 9900 && p[99] == 198;
  free(p);
  return !ok;
}
// NEEDS: pageable memory access
