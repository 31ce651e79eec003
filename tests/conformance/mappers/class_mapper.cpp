// RULE: a C++ declare mapper for a class with a heap buffer maps the buffer, and a member function runs on the device copy
// EXPECT: m[0]=0 m[3]=9 size=4 device_copy=yes
#include <cstdint>
#include <cstdio>

class Matrix {
public:
  int size;
  double *vals;
  explicit Matrix(int n) : size(n), vals(new double[n]) {
    for (int i = 0; i < n; i++) vals[i] = i;
  }
  ~Matrix() { delete[] vals; }
  void square() {
    for (int i = 0; i < size; i++) vals[i] *= vals[i];
  }
};
#pragma omp declare mapper(Matrix m) map(m, m.vals[0:m.size])

int main() {
  Matrix m(4);
  std::uintptr_t host = reinterpret_cast<std::uintptr_t>(m.vals);
  int moved = 0;
#pragma omp target map(tofrom: m) map(from: moved)
  {
    moved = reinterpret_cast<std::uintptr_t>(m.vals) != host;
    m.square();
  }
  std::printf("m[0]=%g m[3]=%g size=%d device_copy=%s\n", m.vals[0], m.vals[3], m.size, moved ? "yes" : "no");
  for (int i = 0; i < 4; i++) if (m.vals[i] != i * i) return 1;
  return !moved;
}
