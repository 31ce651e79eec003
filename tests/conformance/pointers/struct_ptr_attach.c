// RULE: map(s, s.p[0:n]) attaches the device copy of s.p to the device copy of the pointee; writes through it come back to the host buffer
// EXPECT: seen=1 buf[0]=11 buf[3]=14 n=4
#include <stdio.h>

struct S { int n; int *p; };

int main(void) {
  int buf[4] = {1, 2, 3, 4}, seen = 0;
  struct S s = {4, buf};
#pragma omp target data map(tofrom: s, s.p[0:4])
  {
    buf[0] = 50; /* host only */
#pragma omp target map(from: seen)
    {
      seen = s.p[0];
      for (int i = 0; i < s.n; i++) s.p[i] = i + 11;
    }
  }
  printf("seen=%d buf[0]=%d buf[3]=%d n=%d\n", seen, buf[0], buf[3], s.n);
  return !(seen == 1 && buf[0] == 11 && buf[3] == 14 && s.n == 4);
}
