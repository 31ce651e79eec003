// RULE: memory from llvm_omp_target_alloc_host and _shared is directly readable and writable by the host
// NOT-ON-MPI: host and shared allocations: a remote device's memory is not the program's to address
// EXPECT: host=41 shared=51
#include <omp.h>
#include <stdio.h>

void *llvm_omp_target_alloc_host(size_t, int);
void *llvm_omp_target_alloc_shared(size_t, int);
void llvm_omp_target_free_host(void *, int);
void llvm_omp_target_free_shared(void *, int);

int main(void) {
  int *ph = (int *)llvm_omp_target_alloc_host(sizeof(int), 0);
  int *ps = (int *)llvm_omp_target_alloc_shared(sizeof(int), 0);
  if (!ph || !ps) return 1;
  *ph = 40;
  *ps = 50;
#pragma omp target is_device_ptr(ph, ps) device(0)
  { *ph += 1; *ps += 1; }
  printf("host=%d shared=%d\n", *ph, *ps);
  int ok = *ph == 41 && *ps == 51;
  llvm_omp_target_free_host(ph, 0);
  llvm_omp_target_free_shared(ps, 0);
  return !ok;
}
