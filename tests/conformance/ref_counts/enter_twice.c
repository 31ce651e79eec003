// RULE: two enter data make two references: the first exit data(from) neither removes nor copies back, the second does both
// EXPECT: first: present=1 x=0
// EXPECT: second: present=0 x=9
#include <omp.h>
#include <stdio.h>

int main(void) {
  int x = 0, d = omp_get_default_device();
#pragma omp target enter data map(to: x)
#pragma omp target enter data map(to: x)
#pragma omp target map(tofrom: x)
  x = 9;
#pragma omp target exit data map(from: x)
  int p1 = omp_target_is_present(&x, d), x1 = x;
  printf("first: present=%d x=%d\n", p1, x1);
#pragma omp target exit data map(from: x)
  int p2 = omp_target_is_present(&x, d);
  printf("second: present=%d x=%d\n", p2, x);
  return !(p1 == 1 && x1 == 0 && p2 == 0 && x == 9);
}
