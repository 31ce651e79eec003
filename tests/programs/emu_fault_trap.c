// A target region that calls __builtin_trap(), for the emulated drivers' kernel-fault tests:
// on a GPU the kernel stops at the trap and the driver reports it; the emulators must report it
// too instead of dying of the twin's SIGILL. The trap depends on the argument count, so the
// compiler keeps the code before it.
#include <stdio.h>

int main(int argc, char **argv) {
  (void)argv;
  int before = 0, trap = argc == 1;
#pragma omp target map(from : before)
  before = 1;
  printf("before=%d\n", before);
  fflush(stdout);
#pragma omp target map(to : trap)
  {
    if (trap)
      __builtin_trap();
  }
  printf("after the trapping region: not reached on a GPU\n");
  return 0;
}
