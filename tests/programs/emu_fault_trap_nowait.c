// Three `nowait` target regions, the last of which calls __builtin_trap(), then a taskwait:
// the construct that failed must end the program (offloading is mandatory), named by the
// kernel that trapped, not by whichever kernel was launched last; the error must not be lost
// because the task polling the construct found the failure before finishing it.
#include <stdio.h>

int main(int argc, char **argv) {
  (void)argv;
  int before = 0, trap = argc == 1;
#pragma omp target map(from : before)
  before = 1;
  printf("before=%d\n", before);
  fflush(stdout);
#pragma omp target nowait
  {
  }
#pragma omp target nowait
  {
  }
#pragma omp target nowait map(to : trap)
  {
    if (trap)
      __builtin_trap();
  }
#pragma omp taskwait
  printf("after the trapping region: not reached on a GPU\n");
  return 0;
}
