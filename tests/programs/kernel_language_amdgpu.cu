// A CUDA kernel compiled by clang-22 with -foffload-via-llvm for gfx90a (with an x86-64 twin, for
// the emulated HSA runtime), launched with <<<grid, block, shared>>>: clang's host stub hands the
// kernel's own parameter buffer to llvmLaunchKernel, and the AMDGPU plugin copies it into the
// kernarg segment. Every parameter is 8 bytes: the emulator calls the twin with one register per
// parameter. Then llvmLaunchKernel directly, with parameter buffers of the wrong size.
// EXPECT: launch ok
// EXPECT: errors ok
#include <stdio.h>

extern "C" {
void *llvm_omp_target_alloc_shared(size_t size, int device);
void llvm_omp_target_free_shared(void *ptr, int device);
// What clang's kernel stubs call (clang declares it only in the host compilation of a stub).
unsigned llvmLaunchKernel(const void *func, dim3 grid, dim3 block, void **args, size_t shared,
                          void *stream);
}

// clang's parameter block for llvmLaunchKernel under -foffload-via-llvm.
struct launch_params {
  size_t size;
  void *data;
  void **ptrs;
};

__global__ void affine(long *out, long n, long scale, long offset) {
#if defined(__AMDGPU__)
  // Reads a hidden argument (the code object then has implicit arguments after the explicit
  // ones): on a GPU, one the plugin put at the wrong place leaves `out` as it was. The x86-64
  // twin that the emulator runs has no such argument.
  if (__builtin_amdgcn_workgroup_size_x() != 8)
    return;
#endif
  for (long i = 0; i < n; i++)
    out[i] = i * scale + offset;
}

// LLVM's dim3 has no three-number constructor (and dim3(x) leaves y and z 0, which counts as 1).
static dim3 dims(unsigned x, unsigned y, unsigned z) {
  dim3 d;
  d.x = x;
  d.y = y;
  d.z = z;
  return d;
}

static int failures;
#define CHECK(cond)                                                                        \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      printf("FAILED line %d: %s\n", __LINE__, #cond);                                     \
      failures++;                                                                          \
    }                                                                                      \
  } while (0)

int main() {
  long *out = (long *)llvm_omp_target_alloc_shared(5 * sizeof(long), 0);
  for (int i = 0; i < 5; i++)
    out[i] = -1;
  // Distinct values: a parameter at the wrong offset gives other numbers (or a fault).
  affine<<<dims(3, 2, 1), dims(8, 4, 1), 256>>>(out, 5, 7, 100);
  for (int i = 0; i < 5; i++)
    CHECK(out[i] == i * 7 + 100);
  printf("out[4]=%ld\n", out[4]);
  if (!failures)
    printf("launch ok\n");

  // The kernel takes 32 bytes of parameters: 24 and 40 are refused.
  long values[5] = {(long)out, 5, 1, 2, 3};
  void *pointers[5] = {&values[0], &values[1], &values[2], &values[3], &values[4]};
  dim3 one = dims(1, 1, 1);
  launch_params few = {24, values, pointers};
  CHECK(llvmLaunchKernel((const void *)affine, one, one, (void **)&few, 0, 0) != 0);
  launch_params many = {40, values, pointers};
  CHECK(llvmLaunchKernel((const void *)affine, one, one, (void **)&many, 0, 0) != 0);
  CHECK(out[0] == 100 && out[4] == 128);
  llvm_omp_target_free_shared(out, 0);
  if (!failures)
    printf("errors ok\n");
  return failures != 0;
}
