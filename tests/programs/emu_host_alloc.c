// Host memory allocated for the program (llvm_omp_target_alloc_host) copied to and from device
// memory, small (below the plugin's 1 MiB lock threshold) and large: every GPU reaches such
// memory as it is, so the copies need neither a staging buffer nor a lock.
#include <omp.h>
#include <stdio.h>
#include <string.h>

void *llvm_omp_target_alloc_host(size_t size, int device);
void llvm_omp_target_free_host(void *ptr, int device);

int main(void) {
  int dev = omp_get_default_device(), host = omp_get_initial_device(), ok = 1;
  size_t sizes[] = {4096, 2 << 20};
  for (int s = 0; s < 2; s++) {
    size_t n = sizes[s];
    unsigned char *h = llvm_omp_target_alloc_host(n, dev);
    unsigned char *d = omp_target_alloc(n, dev);
    if (!h || !d) return 2;
    for (size_t i = 0; i < n; i++) h[i] = (unsigned char)(i * 7 + s);
    ok &= omp_target_memcpy(d, h, n, 0, 0, dev, host) == 0;
    memset(h, 0, n);
    ok &= omp_target_memcpy(h, d, n, 0, 0, host, dev) == 0;
    for (size_t i = 0; i < n; i++) ok &= h[i] == (unsigned char)(i * 7 + s);
    omp_target_free(d, dev);
    llvm_omp_target_free_host(h, dev);
  }
  printf("host allocations %s\n", ok ? "ok" : "WRONG");
  return !ok;
}
