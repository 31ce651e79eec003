// RULE: the default mapper is applied to every element of an array section of structs
// EXPECT: s[0].p[0]=1 s[2].p[2]=23 s[3].p[0]=30 device_copies=3
#include <stdint.h>
#include <stdio.h>

typedef struct { int n; int *p; } S;
#pragma omp declare mapper(S s) map(s, s.p[0:s.n])

int main(void) {
  int store[4][3];
  S s[4];
  for (int k = 0; k < 4; k++) {
    for (int i = 0; i < 3; i++) store[k][i] = 10 * k + i;
    s[k].n = 3;
    s[k].p = store[k];
  }
  // elements 0..2 are mapped (with their pointees); element 3 is not touched
  uintptr_t host = (uintptr_t)store;
  int moved = 0;
#pragma omp target map(tofrom: s[0:3]) map(tofrom: moved)
  for (int k = 0; k < 3; k++) {
    moved += (uintptr_t)s[k].p != host + k * sizeof store[0];
    for (int i = 0; i < s[k].n; i++) s[k].p[i] += 1;
  }
  printf("s[0].p[0]=%d s[2].p[2]=%d s[3].p[0]=%d device_copies=%d\n", store[0][0], store[2][2], store[3][0], moved);
  for (int k = 0; k < 4; k++)
    for (int i = 0; i < 3; i++) if (store[k][i] != 10 * k + i + (k < 3)) return 1;
  return moved != 3;
}
