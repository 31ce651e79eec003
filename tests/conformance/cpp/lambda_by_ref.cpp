// RULE: a lambda capturing mapped variables by reference, called inside a target region, updates the device copies that map back
// EXPECT: sum=55 count=10
#include <cstdio>

int main() {
  int sum = 0, count = 0;
  int a[10];
  for (int i = 0; i < 10; i++) a[i] = i + 1;
#pragma omp target map(tofrom: sum, count) map(to: a)
  {
    auto add = [&](int v) { sum += v; count++; };
    for (int i = 0; i < 10; i++) add(a[i]);
  }
  std::printf("sum=%d count=%d\n", sum, count);
  return !(sum == 55 && count == 10);
}
