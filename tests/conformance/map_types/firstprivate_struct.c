// RULE: a firstprivate struct reaches the device with all its fields; device writes are not copied back
// EXPECT: r=3 2.5 xyz h.i=3
#include <stdio.h>

struct S { int i; double d; char name[8]; long pad[3]; };

int main(void) {
  struct S h = {3, 2.5, "xyz", {7, 8, 9}};
  int ri = 0;
  double rd = 0;
  char rn[8] = {0};
  long rp = 0;
#pragma omp target firstprivate(h) map(from: ri, rd, rn, rp)
  {
    ri = h.i; rd = h.d; rp = h.pad[0] + h.pad[1] + h.pad[2];
    for (int k = 0; k < 8; k++) rn[k] = h.name[k];
    h.i = -1;
  }
  printf("r=%d %.1f %s h.i=%d\n", ri, rd, rn, h.i);
  return !(ri == 3 && rd == 2.5 && rn[0] == 'x' && rn[2] == 'z' && rp == 24 && h.i == 3);
}
