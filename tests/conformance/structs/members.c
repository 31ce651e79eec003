// RULE: map(s.a, s.b[0:4]) maps only those members; other members are not present and keep their host values
// EXPECT: a=2 b[3]=40 c=5 c_present=0
#include <omp.h>
#include <stdio.h>

struct S { int a; int b[8]; int c; };

int main(void) {
  struct S s = {1, {1, 2, 3, 4, 5, 6, 7, 8}, 5};
  int d = omp_get_default_device(), cp = -1;
#pragma omp target data map(tofrom: s.a, s.b[0:4])
  {
    cp = omp_target_is_present(&s.c, d);
#pragma omp target
    {
      s.a += 1;
      for (int i = 0; i < 4; i++) s.b[i] *= 10;
    }
  }
  printf("a=%d b[3]=%d c=%d c_present=%d\n", s.a, s.b[3], s.c, cp);
  return !(s.a == 2 && s.b[3] == 40 && s.b[4] == 5 && s.c == 5 && cp == 0);
}
