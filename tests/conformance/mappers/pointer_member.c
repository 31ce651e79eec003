// RULE: a declare mapper that maps s.data[0:s.n] makes map(tofrom: s) also map the pointee, so the kernel can write through s.data
// EXPECT: data[0]=1 data[9]=19 n=10 device_copy=yes
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct { int n; int *data; } Vec;
#pragma omp declare mapper(Vec v) map(v, v.data[0:v.n])

int main(void) {
  Vec s;
  s.n = 10;
  s.data = (int *)malloc(10 * sizeof(int));
  for (int i = 0; i < 10; i++) s.data[i] = i;
  uintptr_t host = (uintptr_t)s.data;
  int moved = 0;
#pragma omp target map(tofrom: s) map(from: moved)
  {
    moved = (uintptr_t)s.data != host; // the kernel sees the device copy of the pointee
    for (int i = 0; i < s.n; i++) s.data[i] = 2 * s.data[i] + 1;
  }
  printf("data[0]=%d data[9]=%d n=%d device_copy=%s\n", s.data[0], s.data[9], s.n, moved ? "yes" : "no");
  for (int i = 0; i < 10; i++) if (s.data[i] != 2 * i + 1) return 1;
  free(s.data);
  return !moved;
}
