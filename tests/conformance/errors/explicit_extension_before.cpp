// RULE: an explicit map that starts before an existing mapping (a[0:4] over a[2:4]) is rejected with 'explicit extension not allowed', also in target data
// EXPECT: inside=3
// EXIT: fail
// EXPECT-STDERR: omptarget message: explicit extension not allowed: host address specified is
// EXPECT-STDERR: (16 bytes), but device allocation maps to host at
// EXPECT-STDERR: omptarget fatal error 1: failure of target construct while offloading is mandatory
#include <cstdio>

int main() {
  int a[8] = {0, 1, 2, 3, 4, 5, 6, 7}, inside = 0;
#pragma omp target enter data map(to: a[2:4])
#pragma omp target map(tofrom: a[2:2]) map(from: inside)
  inside = a[3];
  std::printf("inside=%d\n", inside);
  std::fflush(stdout);
  if (inside != 3) return 1;
#pragma omp target data map(tofrom: a[0:4])
  {
    std::printf("not reached\n");
  }
  return 0;
}
