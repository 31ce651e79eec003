// RULE: copying back a struct whose pointer member was attached leaves the host pointer value unchanged (at update from and at region end)
// EXPECT: update: x=7 ptr=host
// EXPECT: end: x=7 ptr=host buf[0]=70
#include <stdint.h>
#include <stdio.h>

struct S { int x; int *p; };

int main(void) {
  int buf[4] = {1, 2, 3, 4};
  struct S s = {1, buf};
  uintptr_t hp = (uintptr_t)buf;
  int ok = 1;
#pragma omp target data map(tofrom: s, s.p[0:4])
  {
#pragma omp target
    {
      s.x = 7;
      s.p[0] = 70;
    }
#pragma omp target update from(s)
    printf("update: x=%d ptr=%s\n", s.x, (uintptr_t)s.p == hp ? "host" : "device");
    ok = ok && s.x == 7 && (uintptr_t)s.p == hp;
  }
  printf("end: x=%d ptr=%s buf[0]=%d\n", s.x, (uintptr_t)s.p == hp ? "host" : "device", buf[0]);
  return !(ok && s.x == 7 && (uintptr_t)s.p == hp && buf[0] == 70);
}
