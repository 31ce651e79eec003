// A region with more arguments than registers: the rest go on the stack.
// EXPECT: sum 10987654327
#include <stdio.h>
int main(void) {
  long a1 = 1, a2 = 20, a3 = 300, a4 = 4000, a5 = 50000, a6 = 600000, a7 = 7000000, a8 = 80000000;
  long a9 = 900000000, a10 = 10000000000L, sum = 0;
  long arr[3] = {1, 2, 3};
#pragma omp target map(to : a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, arr) map(from : sum)
  sum = a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + arr[0] + arr[1] + arr[2];
  printf("sum %ld\n", sum);
  return sum != 10987654327L;
}
