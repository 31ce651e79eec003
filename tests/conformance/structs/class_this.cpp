// RULE: a method can map its own members through this (map(this->n, this->v[0:n])) and update them on the device
// EXPECT: n=4 v=2,4,6,8 scale=2
#include <cstdio>

class Vec {
public:
  int n = 4;
  int scale = 2;
  int v[4] = {1, 2, 3, 4};
  void times() {
#pragma omp target map(to: this->n, this->scale) map(tofrom: this->v[0:n])
    for (int i = 0; i < n; i++) v[i] *= scale;
  }
};

int main() {
  Vec a;
  a.times();
  std::printf("n=%d v=%d,%d,%d,%d scale=%d\n", a.n, a.v[0], a.v[1], a.v[2], a.v[3], a.scale);
  return !(a.v[0] == 2 && a.v[3] == 8 && a.n == 4 && a.scale == 2);
}
