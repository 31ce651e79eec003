// RULE: data mapped only by a target data region is removed at its end; a section mapped by enter data is present for addresses inside it only
// EXPECT: during=1 after=0 inner=1 past=0
#include <omp.h>
#include <stdio.h>

int main(void) {
  int x = 1, during = 0, d = omp_get_default_device();
  int a[8] = {0};
#pragma omp target data map(to: x)
  during = omp_target_is_present(&x, d);
  int after = omp_target_is_present(&x, d);
#pragma omp target enter data map(to: a[2:4])
  int inner = omp_target_is_present(&a[5], d);
  int past = omp_target_is_present(&a[6], d);
#pragma omp target exit data map(release: a[2:4])
  printf("during=%d after=%d inner=%d past=%d\n", during, after, inner, past);
  return !(during == 1 && after == 0 && inner == 1 && past == 0);
}
