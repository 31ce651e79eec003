// RULE: a struct held by ompx_hold and listed with its members is copied back and unmapped when the construct ends (the members' ends and the struct's end count together)
// FLAGS: -fopenmp-extensions
// EXPECT: inside: 1 after: 0 i=21 j=31
#include <omp.h>
#include <stdio.h>

struct S { int i; int j; };

int main(void) {
  struct S s = {20, 30};
  int dev = omp_get_default_device(), inside;
#pragma omp target data map(ompx_hold, tofrom: s) map(tofrom: s.i) map(tofrom: s.j)
  {
#pragma omp target map(tofrom: s)
    {
      s.i = 21;
      s.j = 31;
    }
    inside = omp_target_is_present(&s, dev);
  }
  int after = omp_target_is_present(&s, dev);
  printf("inside: %d after: %d i=%d j=%d\n", inside, after, s.i, s.j);
  return !(inside == 1 && after == 0 && s.i == 21 && s.j == 31);
}
