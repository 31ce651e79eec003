// A CUDA kernel whose parameter struct has tail padding, built by clang-22 with
// -foffload-via-llvm for gfx90a with an x86-64 twin: (long *, int) spans 12 bytes and clang's
// host stub passes a 16-byte parameter buffer, which the AMDGPU plugin must take. The emulated
// HSA runtime cannot run the twin (it calls twins with 8-byte values only), so the launch fails
// there, after the plugin queued it.
#include <stdio.h>

extern "C" void *llvm_omp_target_alloc_shared(size_t size, int device);

__global__ void fill(long *out, int n) {
  for (int i = 0; i < n; i++)
    out[i] = i;
}

int main() {
  long *out = (long *)llvm_omp_target_alloc_shared(4 * sizeof(long), 0);
  fill<<<1, 1>>>(out, 3);
  printf("launched\n");
  return 0;
}
