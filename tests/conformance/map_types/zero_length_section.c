// RULE: map(to: p[0:0]) maps nothing: if the pointee is unmapped the device pointer keeps the host address, if mapped it is translated
// EXPECT: unmapped=host mapped=device value=1
#include <stdint.h>
#include <stdio.h>

int main(void) {
  int a[4] = {1, 2, 3, 4};
  int *p = a;
  uintptr_t host = (uintptr_t)a;
  int same = 0, translated = 0, value = 0;
#pragma omp target map(to: p[0:0]) map(from: same)
  same = ((uintptr_t)p == host);
#pragma omp target data map(to: a)
  {
    a[0] = 100; /* host only: the device copy still has 1 */
#pragma omp target map(to: p[0:0]) map(from: translated, value)
    {
      translated = ((uintptr_t)p != host);
      value = p[0];
    }
    a[0] = 1;
  }
  printf("unmapped=%s mapped=%s value=%d\n", same ? "host" : "other", translated ? "device" : "host", value);
  return !(same && translated && value == 1);
}
