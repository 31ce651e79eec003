// A kernel with 64 KiB of dynamic shared memory (LLVM's ompx_dyn_cgroup_mem): more than the
// 48 KiB a CUDA kernel may use without opting in (cuFuncSetAttribute), which the plugin must do.
#include <omp.h>
#include <stdio.h>

int main(void) {
  int ok = 0;
#pragma omp target ompx_dyn_cgroup_mem(64 * 1024) map(from : ok)
  ok = 1;
  printf("dyn_shared=%s\n", ok ? "ok" : "WRONG");
  return !ok;
}
