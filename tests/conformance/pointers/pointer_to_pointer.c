// RULE: map(pp[0][0:n]) through a pointer to pointer maps the pointer and its pointee; the kernel reaches the device copy through both levels
// EXPECT: seen=1 buf[1]=20 same=1
// COMPILERS: clang19
// (clang 22 follows OpenMP 6 attach rules: pp[0] itself is not mapped by pp[0][0:4], so the
// kernel reads the host pointer; only clang 19 maps and attaches it.)
#include <stdio.h>

int main(void) {
  int buf[4] = {1, 2, 3, 4}, seen = 0;
  int *p = buf;
  int **pp = &p;
#pragma omp target data map(tofrom: pp[0][0:4])
  {
    buf[0] = 100; /* host only */
#pragma omp target map(tofrom: pp[0][0:4]) map(from: seen)
    {
      seen = pp[0][0];
      pp[0][1] = 20;
      pp[0][0] = 1;
    }
  }
  printf("seen=%d buf[1]=%d same=%d\n", seen, buf[1], p == buf);
  return !(seen == 1 && buf[1] == 20 && buf[0] == 1 && p == buf);
}
