// RULE: map(to: s) map(from: s.y) in one construct: only the member listed with from is copied back
// EXPECT: x=1 y=20 z=3
#include <stdio.h>

struct S { int x; int y; int z; };

int main(void) {
  struct S s = {1, 2, 3};
  int seen = 0;
#pragma omp target map(to: s) map(from: s.y) map(from: seen)
  {
    seen = s.x + s.z;
    s.x = 10;
    s.y = 20;
    s.z = 30;
  }
  printf("x=%d y=%d z=%d\n", s.x, s.y, s.z);
  return !(seen == 4 && s.x == 1 && s.y == 20 && s.z == 3);
}
