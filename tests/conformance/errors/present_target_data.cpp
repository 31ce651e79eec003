// RULE: map(present:) on absent data in target data is a fatal error after the 'present' message, before the region body runs
// EXPECT: device sum=10
// EXIT: fail
// EXPECT-STDERR: device mapping required by 'present' map type modifier does not exist for host address
// EXPECT-STDERR: (16 bytes)
// EXPECT-STDERR: omptarget fatal error 1: failure of target construct while offloading is mandatory
#include <cstdio>

int main() {
  int a[4] = {1, 2, 3, 4}, sum = 0;
#pragma omp target map(to: a) map(tofrom: sum)
  for (int i = 0; i < 4; i++) sum += a[i];
  std::printf("device sum=%d\n", sum);
  std::fflush(stdout);
  if (sum != 10) return 1;
#pragma omp target data map(present, to: a)
  {
    std::printf("body ran\n");
  }
  std::printf("not reached\n");
  return 0;
}
