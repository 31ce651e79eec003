/* A clang-compiled (host-style) kernel in an image that also holds the host device runtime
 * (mixed_queries.f90's kernel pulls it in): its omp_get_num_teams() binds to the runtime's
 * (the image is linked -Bsymbolic), which, outside the runtime's own kernels, answers with
 * libomp's, whose teams these are. Run by tests/tests/llvm_suite.rs under both host plugins. */
#include <omp.h>
#include <stdio.h>

void fortran_kernel(int *x);

int main(void) {
  int x = 1, teams = -1, team = -1;
  fortran_kernel(&x);
#pragma omp target teams num_teams(2) map(tofrom : teams, team)
  if (omp_get_team_num() == 0) {
    teams = omp_get_num_teams();
    team = omp_get_team_num();
  }
  printf("x %d teams %d team %d\n", x, teams, team);
  return 0;
}
