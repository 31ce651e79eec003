// RULE: a combined target teams distribute parallel for with reductions (+, max and a logical and) computes what the host computes
// EXPECT: sum=49995000 max=9999 all=1
// (-O2: clang-19's AMDGPU back end crashes on this kernel at -O1, in "Function register usage analysis".)
// FLAGS: -O2
#include <stdio.h>

int main(void) {
  const int n = 10000;
  long sum = 0;
  int max = -1, all = 1;
#pragma omp target teams distribute parallel for reduction(+ : sum) reduction(max : max) \
    reduction(&& : all) map(tofrom : sum, max, all)
  for (int i = 0; i < n; i++) {
    sum += i;
    if (i > max)
      max = i;
    all = all && i >= 0;
  }
  printf("sum=%ld max=%d all=%d\n", sum, max, all);
  return !(sum == 49995000L && max == n - 1 && all);
}
