// RULE: after omp_target_associate_ptr a target region uses the associated device memory for the host array; disassociate removes it
// EXPECT: assoc=0 present=1 dev[2]=102 host[2]=2 disassoc=0 present_after=0
#include <omp.h>
#include <stdio.h>

int main(void) {
  int host = omp_get_initial_device(), dev = 0;
  int a[4] = {0, 1, 2, 3};
  int *d = (int *)omp_target_alloc(sizeof a, dev);
  omp_target_memcpy(d, a, sizeof a, 0, 0, dev, host);
  int rc = omp_target_associate_ptr(a, d, sizeof a, 0, dev);
  int present = omp_target_is_present(a, dev);
  // a is present, so map(tofrom) neither allocates nor copies: the kernel writes into d
#pragma omp target map(tofrom: a) device(dev)
  for (int i = 0; i < 4; i++) a[i] += 100;
  int back[4];
  omp_target_memcpy(back, d, sizeof back, 0, 0, host, dev);
  int rc2 = omp_target_disassociate_ptr(a, dev);
  int present2 = omp_target_is_present(a, dev);
  omp_target_free(d, dev);
  printf("assoc=%d present=%d dev[2]=%d host[2]=%d disassoc=%d present_after=%d\n", rc, present, back[2], a[2], rc2,
         present2);
  return !(rc == 0 && present == 1 && back[2] == 102 && a[2] == 2 && rc2 == 0 && present2 == 0);
}
