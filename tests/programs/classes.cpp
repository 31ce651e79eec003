// C++: classes, templates, lambdas and std::vector storage inside target regions.
// EXPECT: cpp ok
#include <cstdio>
#include <numeric>
#include <omp.h>
#include <vector>

template <typename T> struct Vec3 {
  T x, y, z;
  T dot(const Vec3 &o) const { return x * o.x + y * o.y + z * o.z; }
};

template <typename T> T device_dot_sum(std::vector<Vec3<T>> &v) {
  Vec3<T> *p = v.data();
  size_t n = v.size();
  T sum = 0;
#pragma omp target teams distribute parallel for map(to : p[0:n]) reduction(+ : sum)
  for (size_t i = 0; i < n; i++) sum += p[i].dot(p[i]);
  return sum;
}

int main() {
  std::vector<Vec3<double>> v(1000);
  for (size_t i = 0; i < v.size(); i++) v[i] = {double(i), 1.0, 2.0};
  double expect = 0;
  for (auto &e : v) expect += e.dot(e);
  double got = device_dot_sum(v);

  std::vector<int> data(256);
  std::iota(data.begin(), data.end(), 0);
  int *d = data.data();
  int factor = 3;
  auto scale = [=](int value) { return value * factor; };
#pragma omp target teams distribute parallel for map(tofrom : d[0:256])
  for (int i = 0; i < 256; i++) d[i] = scale(d[i]);
  bool lambda_ok = data[255] == 765 && data[1] == 3;

  bool device = false;
#pragma omp target map(from : device)
  device = !omp_is_initial_device();

  bool ok = got == expect && lambda_ok && device;
  if (ok)
    std::printf("cpp ok\n");
  else
    std::printf("FAIL got %f expect %f lambda %d device %d\n", got, expect, lambda_ok, device);
  return ok ? 0 : 1;
}
