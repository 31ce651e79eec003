// RULE: LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD=0 (memory manager disabled) is accepted and mapping many buffers of various sizes still works
// ENV: LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD=0
// EXPECT: rounds=200 ok=200
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  int ok = 0;
  for (int r = 0; r < 200; r++) {
    int n = 1 + (r * 37) % 3000;
    int *p = (int *)malloc(n * sizeof(int));
    for (int i = 0; i < n; i++) p[i] = i;
#pragma omp target map(tofrom: p[0:n])
    for (int i = 0; i < n; i++) p[i] += r;
    int good = 1;
    for (int i = 0; i < n; i++) good &= p[i] == i + r;
    ok += good;
    free(p);
  }
  printf("rounds=200 ok=%d\n", ok);
  return ok != 200;
}
