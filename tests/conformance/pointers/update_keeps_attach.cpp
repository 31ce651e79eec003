// RULE: target update to(s) of a struct with an attached pointer sends the other fields but keeps the device pointer attached
// EXPECT: x=8 v=1
#include <cstdio>

struct S { int x; int *p; };

int main() {
  int buf[2] = {1, 2};
  S s = {1, buf};
  int r = 0, v = 0;
#pragma omp target enter data map(to: s, s.p[0:2])
  s.x = 8;
  buf[0] = 99; /* host only */
#pragma omp target update to(s)
#pragma omp target map(from: r, v)
  {
    r = s.x;
    v = s.p[0]; /* still the device buffer: 1, not 99 */
  }
#pragma omp target exit data map(release: s, s.p[0:2])
  std::printf("x=%d v=%d\n", r, v);
  return !(r == 8 && v == 1 && s.p == buf);
}
