// RULE: omp_target_is_accessible answers as LLVM 22: the host (initial device, or -1) can access host memory, a null pointer is never accessible, and no device of the host plugin claims direct access (programs then map the data)
// COMPILERS: clang22
// EXPECT: host=1 initial_alias=1 null=0 device0=0
#include <omp.h>
#include <stdio.h>

int main(void) {
  int a[16];
  int host = omp_target_is_accessible(a, sizeof a, omp_get_initial_device());
  int alias = omp_target_is_accessible(a, sizeof a, -1);
  int null = omp_target_is_accessible(NULL, 4, omp_get_initial_device());
  int device0 = omp_target_is_accessible(a, sizeof a, 0);
  printf("host=%d initial_alias=%d null=%d device0=%d\n", host, alias, null, device0);
  return !(host == 1 && alias == 1 && null == 0 && device0 == 0);
}
