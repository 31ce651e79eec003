// A three-dimensional ompx_bare launch (clang-22): the grid and block the program asks for
// reach the driver as they are. The emulator runs the kernel's x86-64 twin, which does not
// model GPU thread and block ids, so only the launch is checked here, not what the kernel wrote.
#include <omp.h>
#include <ompx.h>
#include <stdio.h>

int main(void) {
  int x = 0;
#pragma omp target teams ompx_bare num_teams(3, 2, 1) thread_limit(4, 2, 2) map(tofrom : x)
  {
    if (ompx_thread_id_x() == 0 && ompx_block_id_x() == 0)
      x = 1;
  }
  printf("launched\n");
  return 0;
}
