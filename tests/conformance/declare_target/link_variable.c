// RULE: a declare target link variable is mapped by an explicit map clause: the kernel sees the host value and its writes come back
// EXPECT: seen=40 host=41
#include <stdio.h>

int lv = 40;
#pragma omp declare target link(lv)

int main(void) {
  int seen = 0;
#pragma omp target map(tofrom: lv) map(from: seen)
  { seen = lv; lv += 1; }
  printf("seen=%d host=%d\n", seen, lv);
  return !(seen == 40 && lv == 41);
}
