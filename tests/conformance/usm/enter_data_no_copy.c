// RULE: with requires unified_shared_memory, target enter data makes no copy and no table entry: host changes after it are seen by the kernel, and omp_target_is_present is false
// NOT-ON-MPI: unified shared memory: a remote device cannot read the program's memory
// EXPECT: kernel_saw=7 present=0
#pragma omp requires unified_shared_memory
#include <omp.h>
#include <stdio.h>

int main(void) {
  int x[2] = {1, 1}, seen = 0;
#pragma omp target enter data map(to: x)
  x[0] = 7; // no update needed: the device uses host memory
#pragma omp target map(from: seen)
  seen = x[0];
  int present = omp_target_is_present(x, omp_get_default_device());
#pragma omp target exit data map(release: x)
  printf("kernel_saw=%d present=%d\n", seen, present);
  return !(seen == 7 && present == 0);
}
// NEEDS: pageable memory access
