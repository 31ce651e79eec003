// RULE: several small firstprivate variables in one region each reach the kernel with their own contents
// EXPECT: a=6 b=60 c=600 d=1.5 e=abc
#include <cstdio>
#include <cstring>

int main() {
  int a[3] = {1, 2, 3};
  short b[4] = {10, 20, 15, 15};
  long c[2] = {100, 500};
  double d = 1.5;
  char e[4] = "abc";
  int ra = 0, rb = 0;
  long rc = 0;
  double rd = 0;
  char re[4] = {0};
#pragma omp target firstprivate(a, b, c, d, e) map(from: ra, rb, rc, rd, re)
  {
    ra = rb = 0;
    for (int i = 0; i < 3; i++) ra += a[i];
    for (int i = 0; i < 4; i++) rb += b[i];
    rc = c[0] + c[1];
    rd = d;
    for (int i = 0; i < 4; i++) re[i] = e[i];
    a[0] = b[0] = c[0] = e[0] = 0;
  }
  std::printf("a=%d b=%d c=%ld d=%.1f e=%s\n", ra, rb, rc, rd, re);
  bool ok = ra == 6 && rb == 60 && rc == 600 && rd == 1.5 && !std::strcmp(re, "abc");
  return !(ok && a[0] == 1 && b[0] == 10 && c[0] == 100 && e[0] == 'a');
}
