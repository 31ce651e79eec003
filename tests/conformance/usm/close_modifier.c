// RULE: with requires unified_shared_memory, map(close, tofrom:) still makes a separate device copy, copied back at the end
// NOT-ON-MPI: unified shared memory: a remote device cannot read the program's memory
// EXPECT: in_kernel_host_value=0 after=5 copy=yes
#pragma omp requires unified_shared_memory
#include <stdint.h>
#include <stdio.h>

int main(void) {
  int a[4] = {0, 0, 0, 0}, seen = -1, copy = 0;
  uintptr_t host = (uintptr_t)a;
#pragma omp target map(close, tofrom: a) map(from: seen, copy)
  {
    copy = (uintptr_t)a != host;
    for (int i = 0; i < 4; i++) a[i] = 5;
    seen = ((volatile int *)host)[0]; // the host array is not written until the region ends
  }
  printf("in_kernel_host_value=%d after=%d copy=%s\n", seen, a[0], copy ? "yes" : "no");
  return !(copy && seen == 0 && a[0] == 5 && a[3] == 5);
}
// NEEDS: pageable memory access
