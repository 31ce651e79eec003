// RULE: target update with the present motion modifier on absent data reports a 'present' motion modifier message and is fatal
// EXPECT: updated ok: 9
// EXIT: fail
// EXPECT-STDERR: omptarget message: device mapping required by 'present' motion modifier does not exist for host address
// EXPECT-STDERR: (16 bytes)
// EXPECT-STDERR: omptarget fatal error 1: failure of target construct while offloading is mandatory
#include <cstdio>

int main() {
  int a[4] = {0}, b[4] = {0};
#pragma omp target enter data map(alloc: a)
#pragma omp target
  a[0] = 9;
#pragma omp target update from(present: a)
  std::printf("updated ok: %d\n", a[0]);
  std::fflush(stdout);
  if (a[0] != 9) return 1;
#pragma omp target update to(present: b)
  std::printf("not reached\n");
  return 0;
}
