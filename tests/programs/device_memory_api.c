// Uses device 0 through the device-memory API only (no target regions): works on a plugin that
// runs no images, such as the frozen ABI 1.0 test plugin.
#include <omp.h>
#include <stdio.h>

#define N 4096

int main(void) {
  int host = omp_get_initial_device();
  int devices = omp_get_num_devices();
  static int src[N], back[N];
  for (int i = 0; i < N; ++i)
    src[i] = 3 * i + 1;
  int *dev = omp_target_alloc(sizeof src, 0);
  if (!dev) {
    printf("omp_target_alloc failed\n");
    return 1;
  }
  if (omp_target_memcpy(dev, src, sizeof src, 0, 0, 0, host) ||
      omp_target_memcpy(back, dev, sizeof back, 0, 0, host, 0)) {
    printf("omp_target_memcpy failed\n");
    return 1;
  }
  // A copy inside the device, at an offset, then back.
  int *dev2 = omp_target_alloc(sizeof src, 0);
  if (omp_target_memcpy(dev2, dev, sizeof(int) * 10, 0, sizeof(int) * 100, 0, 0) ||
      omp_target_memcpy(back, dev2, sizeof(int) * 10, 0, 0, host, 0)) {
    printf("device-to-device omp_target_memcpy failed\n");
    return 1;
  }
  int ok = 1;
  for (int i = 0; i < 10; ++i)
    ok &= back[i] == 3 * (100 + i) + 1;
  // A fill of part of the device copy (a plugin without a device-side fill, as the frozen
  // ABI 1.0 one, gets a copy of the bytes instead), then back.
  unsigned char bytes[16];
  int filled = omp_target_memset((char *)dev2 + 3, 0x7f, 9, 0) == (char *)dev2 + 3 &&
               !omp_target_memcpy(bytes, dev2, sizeof bytes, 0, 0, host, 0);
  for (int i = 0; i < 16 && filled; ++i)
    filled = i >= 3 && i < 12 ? bytes[i] == 0x7f : bytes[i] != 0x7f;
  // Associating a host array with device memory makes it present.
  int assoc = omp_target_associate_ptr(src, dev, sizeof src, 0, 0);
  int present = omp_target_is_present(src, 0);
  omp_target_disassociate_ptr(src, 0);
  omp_target_free(dev2, 0);
  omp_target_free(dev, 0);
  printf("devices %d copies %s filled %s associated %d present %d\n", devices, ok ? "ok" : "WRONG",
         filled ? "ok" : "WRONG", assoc == 0, present);
  return ok && filled ? 0 : 1;
}
