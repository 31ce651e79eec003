// RULE: omp_target_is_present is true only while a variable is mapped on that device, and always true for the initial device
// EXPECT: before=0 during=1 other_dev=0 after=0 host=1 null=0
#include <omp.h>
#include <stdio.h>

int main(void) {
  int a[8] = {0};
  int before = omp_target_is_present(a, 0);
#pragma omp target enter data map(to: a) device(0)
  int during = omp_target_is_present(&a[5], 0);
  int other = omp_target_is_present(a, 1);
#pragma omp target device(0)
  a[5] = 5;
#pragma omp target exit data map(from: a) device(0)
  int after = omp_target_is_present(a, 0);
  int host = omp_target_is_present(a, omp_get_initial_device());
  int null = omp_target_is_present(NULL, 0);
  printf("before=%d during=%d other_dev=%d after=%d host=%d null=%d\n", before, during, other, after, host, null);
  return !(before == 0 && during == 1 && other == 0 && after == 0 && host == 1 && null == 0 && a[5] == 5);
}
// NEEDS: 4 devices
