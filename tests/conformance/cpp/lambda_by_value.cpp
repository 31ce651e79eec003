// RULE: a lambda capturing by value, defined on the host and used in a target region, carries its captured copies to the device
// EXPECT: out[0]=7 out[4]=47
#include <cstdio>

int main() {
  int scale = 10, offset = 7;
  int out[5] = {0};
  auto f = [=](int i) { return i * scale + offset; };
  scale = 0; // the lambda keeps its own copy
#pragma omp target map(from: out)
  for (int i = 0; i < 5; i++) out[i] = f(i);
  std::printf("out[0]=%d out[4]=%d\n", out[0], out[4]);
  for (int i = 0; i < 5; i++) if (out[i] != i * 10 + 7) return 1;
  return scale != 0;
}
