// RULE: a member of a nested struct (s.in.x) can be mapped on its own and is copied both ways
// EXPECT: x=11 y=2 tag=3
#include <stdio.h>

struct Inner { int x; int y; };
struct Outer { int tag; struct Inner in; };

int main(void) {
  struct Outer s = {3, {1, 2}};
  int seen = 0;
#pragma omp target map(tofrom: s.in.x) map(from: seen)
  {
    seen = s.in.x;
    s.in.x += 10;
  }
  printf("x=%d y=%d tag=%d\n", s.in.x, s.in.y, s.tag);
  return !(seen == 1 && s.in.x == 11 && s.in.y == 2 && s.tag == 3);
}
