// RULE: a host lambda capturing an array by reference, mapped into a target region, writes the device copy of the array that is copied back
// EXPECT: a[0]=1 a[7]=15
#include <cstdio>

int main() {
  int a[8];
  for (int i = 0; i < 8; i++) a[i] = i;
  auto twice_plus_one = [&a](int i) { a[i] = 2 * a[i] + 1; };
#pragma omp target map(tofrom: a) map(to: twice_plus_one)
  for (int i = 0; i < 8; i++) twice_plus_one(i);
  std::printf("a[0]=%d a[7]=%d\n", a[0], a[7]);
  for (int i = 0; i < 8; i++) if (a[i] != 2 * i + 1) return 1;
  return 0;
}
