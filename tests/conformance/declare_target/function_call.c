// RULE: declare target functions (including a recursive one) are callable from kernels
// EXPECT: fib10=55 sq=[0,1,4,9]
#include <stdio.h>

#pragma omp declare target
int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
static inline int square(int x) { return x * x; }
#pragma omp end declare target

int main(void) {
  int f = 0, sq[4];
#pragma omp target map(from: f, sq)
  {
    f = fib(10);
    for (int i = 0; i < 4; i++) sq[i] = square(i);
  }
  printf("fib10=%d sq=[%d,%d,%d,%d]\n", f, sq[0], sq[1], sq[2], sq[3]);
  return !(f == 55 && sq[3] == 9 && sq[2] == 4);
}
