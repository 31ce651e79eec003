// Three arrays entered separately and exited by one construct: LIBOMPTARGET_INFO's copies back
// and removals come in LLVM's order (the last argument first, every removal after every copy).
#include <stdio.h>

int main(void) {
  int a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8}, c[4] = {9, 10, 11, 12};
#pragma omp target enter data map(to: a)
#pragma omp target enter data map(to: b)
#pragma omp target enter data map(to: c)
#pragma omp target map(present, alloc: a, b, c)
  for (int i = 0; i < 4; i++) a[i] += 1, b[i] += 1, c[i] += 1;
#pragma omp target exit data map(from: a, b, c)
  printf("%d %d %d\n", a[3], b[3], c[3]);
  return !(a[3] == 5 && b[3] == 9 && c[3] == 13);
}
