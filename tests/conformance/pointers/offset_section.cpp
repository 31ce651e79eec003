// RULE: with p[2:3] mapped, an implicitly used p (which points before the section, at its base) is still translated: zero-length lookups match the base pointer of a mapping
// EXPECT: p[2]=30 p[4]=50 p[0]=1 p[5]=6 present=1,0
#include <omp.h>
#include <cstdio>

int main() {
  int buf[6] = {1, 2, 3, 4, 5, 6};
  int *p = buf;
  int d = omp_get_default_device(), in = 0, out = 0;
#pragma omp target data map(tofrom: p[2:3])
  {
    in = omp_target_is_present(&buf[4], d);
    out = omp_target_is_present(&buf[5], d);
#pragma omp target
    for (int i = 2; i < 5; i++) p[i] *= 10;
  }
  std::printf("p[2]=%d p[4]=%d p[0]=%d p[5]=%d present=%d,%d\n", buf[2], buf[4], buf[0], buf[5], in, out);
  return !(buf[2] == 30 && buf[4] == 50 && buf[0] == 1 && buf[5] == 6 && in == 1 && out == 0);
}
