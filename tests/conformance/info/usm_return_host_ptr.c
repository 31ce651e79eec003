// RULE: with unified_shared_memory, LIBOMPTARGET_INFO=8 reports that the host pointer is used instead of creating a map entry
// NOT-ON-MPI: unified shared memory: a remote device cannot read the program's memory
// FLAGS: -g
// ENV: LIBOMPTARGET_INFO=8
// EXPECT: a[7]=8
// EXPECT-STDERR: omptarget device 0 info: Return HstPtrBegin 0x
// EXPECT-STDERR:  Size=32 for unified shared memory
// REJECT-STDERR: Creating new map entry
#pragma omp requires unified_shared_memory
#include <stdio.h>

int main(void) {
  int a[8];
  for (int i = 0; i < 8; i++) a[i] = i;
#pragma omp target map(tofrom: a)
  for (int i = 0; i < 8; i++) a[i] += 1;
  printf("a[7]=%d\n", a[7]);
  for (int i = 0; i < 8; i++) if (a[i] != i + 1) return 1;
  return 0;
}
// NEEDS: pageable memory access
