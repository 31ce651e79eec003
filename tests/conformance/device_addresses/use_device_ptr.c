// RULE: inside target data use_device_ptr(p) the host pointer variable holds the device address of the mapped pointee
// EXPECT: translated=yes p[0]=100 p[7]=107
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  int *p = (int *)malloc(8 * sizeof(int));
  for (int i = 0; i < 8; i++) p[i] = i;
  int *hp = p, *dp = NULL;
#pragma omp target data map(tofrom: p[0:8])
  {
#pragma omp target data use_device_ptr(p)
    {
      dp = p;
      // a kernel given the device address directly
#pragma omp target is_device_ptr(p)
      for (int i = 0; i < 8; i++) p[i] += 100;
    }
  }
  int translated = dp != NULL && dp != hp && p == hp;
  printf("translated=%s p[0]=%d p[7]=%d\n", translated ? "yes" : "no", p[0], p[7]);
  for (int i = 0; i < 8; i++) if (p[i] != 100 + i) return 1;
  free(p);
  return !translated;
}
