// RULE: members mapped by enter data (s.a, s.b) are found by a later target region, which uses the device copies without copying
// EXPECT: seen=1,2 host=5,6 after=10,20
#include <stdio.h>

struct S { int a; int pad[4]; int b; };

int main(void) {
  struct S s = {1, {0}, 2};
  int sa = 0, sb = 0;
#pragma omp target enter data map(to: s.a, s.b)
  s.a = 5; /* host only */
  s.b = 6;
#pragma omp target map(tofrom: s.a, s.b) map(from: sa, sb)
  {
    sa = s.a;
    sb = s.b;
    s.a = 10;
    s.b = 20;
  }
  int ha = s.a, hb = s.b;
#pragma omp target exit data map(from: s.a, s.b)
  printf("seen=%d,%d host=%d,%d after=%d,%d\n", sa, sb, ha, hb, s.a, s.b);
  return !(sa == 1 && sb == 2 && ha == 5 && hb == 6 && s.a == 10 && s.b == 20);
}
