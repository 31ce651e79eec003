// RULE: omp_target_memset fills exactly the bytes it is given, from an odd address and of an odd length, large or small, and leaves the bytes around them alone
// EXPECT: small=ok large=ok
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Fills `count` bytes from `offset` of a device buffer of `total` bytes holding 0x11, then
// reads it all back: 0xc3 inside the range, 0x11 outside.
static int fill_and_check(int dev, size_t total, size_t offset, size_t count) {
  unsigned char *host = malloc(total);
  unsigned char *d = omp_target_alloc(total, dev);
  if (!host || !d) return 0;
  memset(host, 0x11, total);
  omp_target_memcpy(d, host, total, 0, 0, dev, omp_get_initial_device());
  omp_target_memset(d + offset, 0xc3, count, dev);
  memset(host, 0, total);
  omp_target_memcpy(host, d, total, 0, 0, omp_get_initial_device(), dev);
  int ok = 1;
  for (size_t i = 0; i < total; i++) {
    unsigned char want = (i >= offset && i < offset + count) ? 0xc3 : 0x11;
    if (host[i] != want) {
      printf("byte %zu of %zu: 0x%02x, expected 0x%02x\n", i, total, host[i], want);
      ok = 0;
      break;
    }
  }
  omp_target_free(d, dev);
  free(host);
  return ok;
}

int main(void) {
  int dev = 0;
  int small = fill_and_check(dev, 16, 1, 3) && fill_and_check(dev, 16, 5, 9) &&
              fill_and_check(dev, 64, 3, 1);
  int large = fill_and_check(dev, (1 << 20) + 16, 7, (1 << 20) + 1);
  printf("small=%s large=%s\n", small ? "ok" : "wrong", large ? "ok" : "wrong");
  return !(small && large);
}
