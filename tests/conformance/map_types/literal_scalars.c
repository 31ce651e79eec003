// RULE: firstprivate scalars of every small type are passed to the kernel by value with their exact bits
// EXPECT: c=-5 s=-300 i=70000 l=-5000000000 f=0.25 d=-1.125 u=4000000000
#include <stdio.h>

int main(void) {
  char c = -5;
  short s = -300;
  int i = 70000;
  long long l = -5000000000LL;
  float f = 0.25f;
  double d = -1.125;
  unsigned u = 4000000000u;
  char oc; short os; int oi; long long ol; float of; double od; unsigned ou;
#pragma omp target map(from: oc, os, oi, ol, of, od, ou)
  {
    oc = c; os = s; oi = i; ol = l; of = f; od = d; ou = u;
  }
  printf("c=%d s=%d i=%d l=%lld f=%.2f d=%.3f u=%u\n", oc, os, oi, ol, of, od, ou);
  return !(oc == c && os == s && oi == i && ol == l && of == f && od == d && ou == u);
}
