// RULE: small firstprivates of one region are packed into a single host-to-device transfer, each padded to its host alignment (12 + 4 + 16 + 5 = 37 bytes)
// ENV: LIBOMPTARGET_INFO=32
// EXPECT: out=106
// EXPECT-STDERR: Copying data from host to device, HstPtr=
// EXPECT-STDERR: Size=37, Name=unknown
// REJECT-STDERR: Size=12,
// REJECT-STDERR: Size=16,
#include <stdio.h>

int main(void) {
  int a[3] = {1, 2, 3};
  double b[2] = {0.5, 1.5};
  char c[5] = "abcd";
  int out = 0;
#pragma omp target firstprivate(a, b, c) map(from: out)
  out = a[0] + a[2] + (int)(b[0] + b[1]) + c[3];
  printf("out=%d\n", out);
  return out != 1 + 3 + 2 + 'd';
}
