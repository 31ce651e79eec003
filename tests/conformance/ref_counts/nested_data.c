// RULE: an inner target data on already-mapped data neither copies to the device nor back; only the outermost region's end copies back
// EXPECT: seen=1 after_inner=50 final=2
#include <stdio.h>

int main(void) {
  int x = 1, seen = 0, after_inner = 0;
#pragma omp target data map(tofrom: x)
  {
    x = 50; /* host only */
#pragma omp target data map(tofrom: x)
    {
#pragma omp target map(tofrom: x) map(from: seen)
      {
        seen = x;
        x = 2;
      }
    }
    after_inner = x;
  }
  printf("seen=%d after_inner=%d final=%d\n", seen, after_inner, x);
  return !(seen == 1 && after_inner == 50 && x == 2);
}
