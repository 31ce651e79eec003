// RULE: a member function whose target region maps this->data[0:n] and this->n updates the object's array
// EXPECT: v.data[0]=1 v.data[15]=46 n=16
#include <cstdio>

class Vec {
public:
  int n;
  int *data;
  explicit Vec(int n) : n(n), data(new int[n]) {
    for (int i = 0; i < n; i++) data[i] = i;
  }
  ~Vec() { delete[] data; }
  void scale_add(int s, int c) {
#pragma omp target map(tofrom: data[0:n]) map(to: n)
    for (int i = 0; i < n; i++) data[i] = data[i] * s + c;
  }
};

int main() {
  Vec v(16);
  v.scale_add(3, 1);
  std::printf("v.data[0]=%d v.data[15]=%d n=%d\n", v.data[0], v.data[15], v.n);
  for (int i = 0; i < 16; i++) if (v.data[i] != 3 * i + 1) return 1;
  return 0;
}
