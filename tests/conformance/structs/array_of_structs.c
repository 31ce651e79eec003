// RULE: a section of an array of structs (a[1:2]) maps exactly those elements; the others are not present and untouched
// EXPECT: a[1]=11,12 a[2]=13,14 a[0]=0,0 a[3]=0,0 present=1,0
#include <omp.h>
#include <stdio.h>

struct P { int u, v; };

int main(void) {
  struct P a[4] = {{0, 0}, {1, 2}, {3, 4}, {0, 0}};
  int d = omp_get_default_device(), in = 0, out = 0;
#pragma omp target data map(tofrom: a[1:2])
  {
    in = omp_target_is_present(&a[2].v, d);
    out = omp_target_is_present(&a[3], d);
#pragma omp target
    for (int i = 1; i < 3; i++) {
      a[i].u += 10;
      a[i].v += 10;
    }
  }
  printf("a[1]=%d,%d a[2]=%d,%d a[0]=%d,%d a[3]=%d,%d present=%d,%d\n", a[1].u, a[1].v, a[2].u,
         a[2].v, a[0].u, a[0].v, a[3].u, a[3].v, in, out);
  return !(a[1].u == 11 && a[2].v == 14 && a[0].u == 0 && a[3].v == 0 && in == 1 && out == 0);
}
