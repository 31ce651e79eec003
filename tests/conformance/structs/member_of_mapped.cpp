// RULE: mapping a member of a struct that is already mapped as a whole uses the existing device copy (no copy in or out)
// EXPECT: r=2 inside=50 end=7
#include <cstdio>

struct S { int x; int y; int z; };

int main() {
  S t = {1, 2, 3};
  int r = 0, inside = 0;
#pragma omp target data map(tofrom: t)
  {
    t.y = 50; /* host only */
#pragma omp target map(tofrom: t.y) map(from: r)
    {
      r = t.y;
      t.y = 7;
    }
    inside = t.y;
  }
  std::printf("r=%d inside=%d end=%d\n", r, inside, t.y);
  return !(r == 2 && inside == 50 && t.y == 7);
}
