// RULE: llvm_omp_target_alloc_device/host/shared return memory a kernel can use through is_device_ptr, freed by the matching llvm_omp_target_free_*
// NOT-ON-MPI: host and shared allocations: a remote device's memory is not the program's to address
// EXPECT: device=10 host=20 shared=30
#include <omp.h>
#include <stdio.h>

void *llvm_omp_target_alloc_device(size_t, int);
void *llvm_omp_target_alloc_host(size_t, int);
void *llvm_omp_target_alloc_shared(size_t, int);
void llvm_omp_target_free_device(void *, int);
void llvm_omp_target_free_host(void *, int);
void llvm_omp_target_free_shared(void *, int);

int main(void) {
  int host = omp_get_initial_device(), dev = 0;
  int *pd = (int *)llvm_omp_target_alloc_device(sizeof(int), dev);
  int *ph = (int *)llvm_omp_target_alloc_host(sizeof(int), dev);
  int *ps = (int *)llvm_omp_target_alloc_shared(sizeof(int), dev);
  if (!pd || !ph || !ps) { printf("null\n"); return 1; }
#pragma omp target is_device_ptr(pd, ph, ps) device(dev)
  { *pd = 10; *ph = 20; *ps = 30; }
  int vd = 0, vh = 0, vs = 0;
  omp_target_memcpy(&vd, pd, sizeof(int), 0, 0, host, dev);
  omp_target_memcpy(&vh, ph, sizeof(int), 0, 0, host, dev);
  omp_target_memcpy(&vs, ps, sizeof(int), 0, 0, host, dev);
  llvm_omp_target_free_device(pd, dev);
  llvm_omp_target_free_host(ph, dev);
  llvm_omp_target_free_shared(ps, dev);
  printf("device=%d host=%d shared=%d\n", vd, vh, vs);
  return !(vd == 10 && vh == 20 && vs == 30);
}
