// RULE: declare target enter(var, func) works like declare target to: the global has a device copy and the function runs in kernels
// EXPECT: device=12 host=2
// FLAGS: -fopenmp-version=52
#include <stdio.h>

int counter = 2;
int twice(int x) { return 2 * x; }
#pragma omp declare target enter(counter, twice)

int main(void) {
  int out = 0;
#pragma omp target map(from: out)
  {
    counter = twice(counter) + 8;
    out = counter;
  }
  printf("device=%d host=%d\n", out, counter);
  return !(out == 12 && counter == 2);
}
