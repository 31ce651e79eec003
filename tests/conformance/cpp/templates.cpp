// RULE: a function template containing a target region works for several instantiations (int, double, a struct)
// EXPECT: int=45 double=22.5 pair=45,90
#include <cstdio>

struct P { int a, b; };
P operator+(P x, P y) { return {x.a + y.a, x.b + y.b}; }

template <typename T, int N> T sum(const T (&in)[N], T zero) {
  T acc = zero;
#pragma omp target map(to: in) map(tofrom: acc)
  for (int i = 0; i < N; i++) acc = acc + in[i];
  return acc;
}

int main() {
  int ia[10];
  double da[10];
  P pa[10];
  for (int i = 0; i < 10; i++) { ia[i] = i; da[i] = i * 0.5; pa[i] = {i, 2 * i}; }
  int si = sum(ia, 0);
  double sd = sum(da, 0.0);
  P sp = sum(pa, P{0, 0});
  std::printf("int=%d double=%.1f pair=%d,%d\n", si, sd, sp.a, sp.b);
  return !(si == 45 && sd == 22.5 && sp.a == 45 && sp.b == 90);
}
