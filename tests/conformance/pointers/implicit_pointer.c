// RULE: a pointer used in a target region without a map clause is translated to the device copy of its already-mapped pointee
// EXPECT: seen=1 host_inside=9 after=2
#include <stdio.h>

int main(void) {
  int buf[4] = {1, 1, 1, 1}, seen = 0;
  int *p = buf;
#pragma omp target enter data map(to: buf)
  buf[0] = 9; /* host only */
#pragma omp target map(from: seen)
  {
    seen = p[0];
    p[0] = 2;
  }
  int host_inside = buf[0];
#pragma omp target exit data map(from: buf)
  printf("seen=%d host_inside=%d after=%d\n", seen, host_inside, buf[0]);
  return !(seen == 1 && host_inside == 9 && buf[0] == 2);
}
