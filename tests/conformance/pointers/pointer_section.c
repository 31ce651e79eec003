// RULE: map(p[0:n]) through a pointer maps the pointee: the kernel's p points to the device copy, which is copied back at the end
// EXPECT: seen=1 p[0]=2 p[5]=7
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  int n = 6, seen = 0;
  int *p = malloc(n * sizeof(int));
  for (int i = 0; i < n; i++) p[i] = i + 1;
#pragma omp target data map(tofrom: p[0:n])
  {
    p[0] = 100; /* host only: the device copy keeps 1 */
#pragma omp target map(tofrom: p[0:n]) map(from: seen)
    {
      seen = p[0];
      for (int i = 0; i < n; i++) p[i] += 1;
    }
  }
  printf("seen=%d p[0]=%d p[5]=%d\n", seen, p[0], p[5]);
  int ok = seen == 1 && p[0] == 2 && p[5] == 7;
  free(p);
  return !ok;
}
