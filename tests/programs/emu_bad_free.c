// Frees a GPU's memory wrongly, or touches it after the free, for the allocation-trace tests:
// with OFFLOAD_TRACK_ALLOCATION_TRACES=1 the plugin reports each with the stacks of the
// allocation and the frees. The first argument picks the mistake; `loop N` allocates and frees
// 1 MiB N times, for the cost of tracking. The functions stay out of line and end with a
// store after their last call (no tail call), so that the reports' stacks name them.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *llvm_omp_target_alloc_host(size_t size, int device);

static volatile int calls_made;

__attribute__((noinline)) static void free_twice(void) {
  void *block = omp_target_alloc(64, 0);
  omp_target_free(block, 0);
  omp_target_free(block, 0);
  calls_made++;
}

__attribute__((noinline)) static void free_a_host_address(void) {
  int local = 0;
  omp_target_free(&local, 0);
  calls_made++;
}

__attribute__((noinline)) static void free_pinned_as_device(void) {
  void *pinned = llvm_omp_target_alloc_host(64, 0);
  omp_target_free(pinned, 0);
  calls_made++;
}

__attribute__((noinline)) static void write_after_free(void) {
  char *block = omp_target_alloc(1 << 20, 0);
  omp_target_free(block, 0);
#pragma omp target is_device_ptr(block)
  block[4096] = 1;
  calls_made++;
}

__attribute__((noinline)) static void alloc_and_free(int times) {
  for (int i = 0; i < times; i++)
    omp_target_free(omp_target_alloc(1 << 20, 0), 0);
}

int main(int argc, char **argv) {
  const char *mistake = argc > 1 ? argv[1] : "";
  printf("start\n");
  fflush(stdout);
  if (!strcmp(mistake, "double"))
    free_twice();
  else if (!strcmp(mistake, "foreign"))
    free_a_host_address();
  else if (!strcmp(mistake, "kind"))
    free_pinned_as_device();
  else if (!strcmp(mistake, "use-after-free"))
    write_after_free();
  else if (!strcmp(mistake, "loop") && argc > 2)
    alloc_and_free(atoi(argv[2]));
  else {
    fprintf(stderr, "usage: %s double|foreign|kind|use-after-free|loop N\n", argv[0]);
    return 2;
  }
  printf("done\n");
  return 0;
}
