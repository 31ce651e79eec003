// LLVM 22's kernel-language (CUDA/HIP -foffload-via-llvm) launch path, driven as clang's CUDA
// code generation drives it: __llvmPushCallConfiguration for <<<grid, block, shared, stream>>>,
// __llvmPopCallConfiguration in the kernel's host stub, llvmLaunchKernel with the stub's address
// and the parameter block. No CUDA target exists for the host, so the kernel here is an OpenMP
// target region's host-device kernel, found through the program's offload entries (clang-22's
// layout), whose parameters are one pointer-sized value each: the launch environment (unused on
// the host) and the mapped array.
// EXPECT: configuration ok
// EXPECT: launch ok
// EXPECT: errors ok
#include <omp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef struct {
  unsigned x, y, z;
} dim3;
typedef struct {
  size_t size;
  void *data;
  void **ptrs;
} launch_params_t;

unsigned __llvmPushCallConfiguration(dim3 grid, dim3 block, size_t shared, void *stream);
unsigned __llvmPopCallConfiguration(dim3 *grid, dim3 *block, size_t *shared, void *stream);
unsigned llvmLaunchKernel(const void *func, dim3 grid, dim3 block, void *args, size_t shared,
                          void *stream);

// clang-22's offload entries (section llvm_offload_entries).
struct offload_entry {
  uint64_t reserved;
  uint16_t version, kind;
  uint32_t flags;
  void *address;
  const char *name;
  uint64_t size, data;
  void *aux;
};
extern struct offload_entry __start_llvm_offload_entries[], __stop_llvm_offload_entries[];

void fill_kernel(int *a) {
#pragma omp target map(tofrom : a[0 : 4])
  for (int i = 0; i < 4; i++)
    a[i] = 10 * i + 1;
}

static int failures;
#define CHECK(cond)                                                                        \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      printf("FAILED line %d: %s\n", __LINE__, #cond);                                     \
      failures++;                                                                          \
    }                                                                                      \
  } while (0)

static void *other_thread(void *unused) {
  (void)unused;
  // The configuration is per thread: this one never pushed any.
  dim3 g, b;
  size_t shared;
  void *stream = (void *)1;
  __llvmPopCallConfiguration(&g, &b, &shared, &stream);
  CHECK(g.x == 0 && b.x == 0 && shared == 0 && stream == NULL);
  return NULL;
}

int main(void) {
  // <<<dim3(2,3,4), dim3(5,6,7), 128, stream>>>
  dim3 grid = {2, 3, 4}, block = {5, 6, 7};
  CHECK(__llvmPushCallConfiguration(grid, block, 128, (void *)0x1234) == 0);
  dim3 g, b;
  size_t shared;
  void *stream;
  CHECK(__llvmPopCallConfiguration(&g, &b, &shared, &stream) == 0);
  CHECK(g.x == 2 && g.y == 3 && g.z == 4 && b.x == 5 && b.y == 6 && b.z == 7);
  CHECK(shared == 128 && stream == (void *)0x1234);
  pthread_t thread;
  pthread_create(&thread, NULL, other_thread, NULL);
  pthread_join(thread, NULL);
  if (!failures)
    printf("configuration ok\n");

  const void *stub = NULL;
  for (struct offload_entry *e = __start_llvm_offload_entries; e < __stop_llvm_offload_entries;
       e++)
    if (e->size == 0 && e->name && strstr(e->name, "fill_kernel"))
      stub = e->address;
  CHECK(stub != NULL);
  int device = 0;
  int *a = omp_target_alloc(4 * sizeof(int), device);
  int zeros[4] = {0};
  omp_target_memcpy(a, zeros, sizeof zeros, 0, 0, device, omp_get_initial_device());
  void *values[2] = {NULL, a}; // launch environment, then the array
  void *pointers[2] = {&values[0], &values[1]};
  launch_params_t params = {sizeof values, values, pointers};
  dim3 one = {1, 1, 1};
  CHECK(llvmLaunchKernel(stub, one, one, &params, 0, NULL) == 0);
  int result[4];
  omp_target_memcpy(result, a, sizeof result, 0, 0, omp_get_initial_device(), device);
  CHECK(result[0] == 1 && result[3] == 31);
  if (!failures)
    printf("launch ok\n");

  // A function that is no kernel, and parameters a host kernel cannot take, fail.
  CHECK(llvmLaunchKernel((const void *)main, one, one, &params, 0, NULL) != 0);
  launch_params_t odd = {12, values, pointers};
  CHECK(llvmLaunchKernel(stub, one, one, &odd, 0, NULL) != 0);
  omp_target_free(a, device);
  if (!failures)
    printf("errors ok\n");
  return failures != 0;
}
