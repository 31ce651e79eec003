// RULE: target regions inside target data work on the device copy: they see earlier device writes, not later host writes
// EXPECT: first=10 second=11 host_inside=-1 host_after=12
#include <stdio.h>

int main(void) {
  int a[4] = {10, 0, 0, 0}, first = 0, second = 0, host_inside;
#pragma omp target data map(tofrom: a)
  {
    a[0] = -1; /* host only */
#pragma omp target map(from: first)
    {
      first = a[0];
      a[0] += 1;
    }
#pragma omp target map(from: second)
    {
      second = a[0];
      a[0] += 1;
    }
    host_inside = a[0];
  }
  printf("first=%d second=%d host_inside=%d host_after=%d\n", first, second, host_inside, a[0]);
  return !(first == 10 && second == 11 && host_inside == -1 && a[0] == 12);
}
