// A kernel calling math functions: for gfx942 its image links ocml from the device libraries
// (README, "APUs and coherent nodes": Debian's stop at gfx940).
#include <math.h>
#include <stdio.h>

int main(void) {
  double device = 0, host = 0;
#pragma omp target map(tofrom : device)
  for (int i = 0; i < 1000; i++)
    device += sin(i * 0.01) + sqrt((double)i);
  for (int i = 0; i < 1000; i++)
    host += sin(i * 0.01) + sqrt((double)i);
  int ok = fabs(device - host) < 1e-9 * fabs(host);
  printf("%s %.6f %.6f\n", ok ? "PASS" : "FAIL", device, host);
  return !ok;
}
