// RULE: omp_target_associate_ptr fails for NULL pointers and for the initial device; disassociating an unassociated pointer fails
// EXPECT: null=fail host=fail unassoc=fail x=8
// EXPECT-STDERR: Call to omp_target_associate_ptr with invalid arguments
// EXPECT-STDERR: no association possible on the host
// EXPECT-STDERR: Association not found
#include <omp.h>
#include <stdio.h>

int main(void) {
  int a[4], x = 4;
  int *d = (int *)omp_target_alloc(sizeof a, 0);
  int r1 = omp_target_associate_ptr(NULL, d, sizeof a, 0, 0);
  int r2 = omp_target_associate_ptr(a, d, sizeof a, 0, omp_get_initial_device());
  int r3 = omp_target_disassociate_ptr(a, 0);
#pragma omp target map(tofrom: x)
  x *= 2;
  omp_target_free(d, 0);
  printf("null=%s host=%s unassoc=%s x=%d\n", r1 ? "fail" : "ok", r2 ? "fail" : "ok", r3 ? "fail" : "ok", x);
  return !(r1 && r2 && r3 && x == 8);
}
