// RULE: when the pointee was mapped first by enter data, a later map(s, s.p[0:n]) attaches s.p to that existing device copy
// EXPECT: seen=1 inside=5 after=20
#include <stdio.h>

struct S { int *p; };

int main(void) {
  int buf[4] = {1, 2, 3, 4}, seen = 0;
  struct S s = {buf};
#pragma omp target enter data map(to: buf)
  buf[0] = 5; /* host only */
#pragma omp target map(to: s) map(tofrom: s.p[0:4]) map(from: seen)
  {
    seen = s.p[0];
    s.p[0] = 20;
  }
  int inside = buf[0]; /* buf still referenced by enter data: no copy back */
#pragma omp target exit data map(from: buf)
  printf("seen=%d inside=%d after=%d\n", seen, inside, buf[0]);
  return !(seen == 1 && inside == 5 && buf[0] == 20);
}
