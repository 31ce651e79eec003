// RULE: threads mapping the same already-present array tofrom share the single device copy; nothing is copied back until the last reference goes
// EXPECT: during=0 after=4 present=0
#include <omp.h>
#include <stdio.h>

int main(void) {
  int a[4] = {0, 0, 0, 0};
#pragma omp target enter data map(to: a)
#pragma omp parallel num_threads(4)
  {
    int t = omp_get_thread_num();
    // a is present: tofrom increments/decrements the reference count, no copies
#pragma omp target map(tofrom: a) map(to: t)
    a[t] = 1;
  }
  int during = a[0] + a[1] + a[2] + a[3];
#pragma omp target exit data map(from: a)
  int after = a[0] + a[1] + a[2] + a[3];
  int present = omp_target_is_present(a, omp_get_default_device());
  printf("during=%d after=%d present=%d\n", during, after, present);
  return !(during == 0 && after == 4 && present == 0);
}
