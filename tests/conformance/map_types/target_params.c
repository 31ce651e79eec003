// RULE: kernel arguments follow the clause order, mixing mapped arrays, a pointer section, struct members and by-value scalars
// EXPECT: x=11 a=5 p=9 s=30 k=4
#include <stdio.h>

struct P { int u; int v; int w; };

int main(void) {
  int x = 10, a[2] = {2, 3}, buf[3] = {4, 5, 0}, k = 4;
  int *p = buf;
  struct P s = {10, 20, 0};
#pragma omp target map(tofrom: x) map(to: a) map(tofrom: p[0:3]) map(tofrom: s.u, s.w) map(to: s.v) firstprivate(k)
  {
    x += 1;
    p[2] = p[0] + p[1];
    s.w = s.u + s.v;
    a[0] = a[0] + a[1];
    if (k != 4) x = -1;
  }
  printf("x=%d a=%d p=%d s=%d k=%d\n", x, a[0] + a[1], buf[2], s.w, k);
  return !(x == 11 && a[0] == 2 && buf[2] == 9 && s.w == 30);
}
