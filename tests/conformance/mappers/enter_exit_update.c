// RULE: target enter data, target update and target exit data all apply the default mapper (the pointee moves with the struct)
// EXPECT: after_update=[1,2,3] after_exit=[11,12,13]
#include <stdio.h>

typedef struct { int n; int *p; } S;
#pragma omp declare mapper(S s) map(s, s.p[0:s.n])

int main(void) {
  int d[3] = {0, 1, 2};
  S s = {3, d};
#pragma omp target enter data map(to: s)
#pragma omp target map(alloc: s)
  for (int i = 0; i < s.n; i++) s.p[i] += 1;
#pragma omp target update from(s)
  int u0 = d[0], u1 = d[1], u2 = d[2];
#pragma omp target map(alloc: s)
  for (int i = 0; i < s.n; i++) s.p[i] += 10;
#pragma omp target exit data map(from: s)
  printf("after_update=[%d,%d,%d] after_exit=[%d,%d,%d]\n", u0, u1, u2, d[0], d[1], d[2]);
  return !(u0 == 1 && u2 == 3 && d[0] == 11 && d[2] == 13);
}
