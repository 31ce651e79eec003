// Prints the device count and which plugin each OpenMP device number belongs to: memory of
// the emulated CUDA driver lies at 0x2000'0000'0000, the host plugin's in the process heap.
// The target region only gives the program its images; it runs when an argument is given.
#include <omp.h>
#include <stdint.h>
#include <stdio.h>

int main(int argc, char **argv) {
  (void)argv;
  if (argc > 1) {
    int x = 1;
#pragma omp target map(tofrom : x)
    x += 1;
    printf("x=%d\n", x);
  }
  int n = omp_get_num_devices();
  printf("devices=%d initial=%d\n", n, omp_get_initial_device());
  for (int d = 0; d < n; d++) {
    void *p = omp_target_alloc(64, d);
    uintptr_t a = (uintptr_t)p;
    printf("%d:%s\n", d, p == NULL ? "none" : (a >> 44) == 2 ? "cuda" : "host");
    omp_target_free(p, d);
  }
  return 0;
}
