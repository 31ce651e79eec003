// RULE: on the host plugin llvm_omp_target_lock_mem returns the host pointer itself (NULL for size 0), and mapping then unlocking works
// EXPECT: locked=same zero=null a[0]=1 a[99]=199
#include <omp.h>
#include <stdio.h>

void *llvm_omp_target_lock_mem(void *, size_t, int);
void llvm_omp_target_unlock_mem(void *, int);

int main(void) {
  static int a[100];
  for (int i = 0; i < 100; i++) a[i] = i;
  void *p = llvm_omp_target_lock_mem(a, sizeof a, 0);
  void *z = llvm_omp_target_lock_mem(a, 0, 0);
#pragma omp target map(tofrom: a) device(0)
  for (int i = 0; i < 100; i++) a[i] = 2 * a[i] + 1;
  llvm_omp_target_unlock_mem(a, 0);
  printf("locked=%s zero=%s a[0]=%d a[99]=%d\n", p == (void *)a ? "same" : "other", z ? "nonnull" : "null", a[0], a[99]);
  for (int i = 0; i < 100; i++) if (a[i] != 2 * i + 1) return 1;
  return !(p == (void *)a && z == NULL);
}
