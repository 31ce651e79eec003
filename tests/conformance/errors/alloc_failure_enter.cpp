// RULE: enter data whose device allocation fails is fatal under OMP_TARGET_OFFLOAD=mandatory
// ENV: OMP_TARGET_OFFLOAD=mandatory
// EXPECT: before: 6
// EXIT: fail
// EXPECT-STDERR: omptarget error: Call to getTargetPointer returned null pointer (device failure or illegal mapping).
// EXPECT-STDERR: omptarget fatal error 1: failure of target construct while offloading is mandatory
#include <cstdio>

int main() {
  long small[2] = {2, 3}, r = 0;
  long *p = small;
#pragma omp target map(to: p[0:2]) map(from: r)
  r = p[0] * p[1];
  std::printf("before: %ld\n", r);
  std::fflush(stdout);
  if (r != 6) return 1;
#pragma omp target enter data map(alloc: p[0:(1L << 44)])
  std::printf("not reached\n");
  return 0;
}
