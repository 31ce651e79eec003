// RULE: with requires unified_shared_memory a kernel's write to a mapped array appears on the host even when mapped only to
// NOT-ON-MPI: unified shared memory: a remote device cannot read the program's memory
// EXPECT: a[0]=1 a[9]=10 same_address=yes
#pragma omp requires unified_shared_memory
#include <stdint.h>
#include <stdio.h>

int main(void) {
  int a[10];
  for (int i = 0; i < 10; i++) a[i] = i;
  uintptr_t host = (uintptr_t)a;
  int same = 0;
#pragma omp target map(to: a) map(from: same)
  {
    same = (uintptr_t)a == host; // no device copy: the kernel uses the host array
    for (int i = 0; i < 10; i++) a[i] += 1;
  }
  printf("a[0]=%d a[9]=%d same_address=%s\n", a[0], a[9], same ? "yes" : "no");
  for (int i = 0; i < 10; i++) if (a[i] != i + 1) return 1;
  return !same;
}
// NEEDS: pageable memory access
