// A target region that writes through a null pointer, for the emulated drivers' kernel-fault
// tests: on a GPU the kernel faults (an illegal address) and the driver reports it; the
// emulators must report it too instead of dying of the twin's SIGSEGV. The pointer comes from
// the command line's argument count, so the compiler cannot see that it is null.
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  (void)argv;
  int *volatile nowhere = (int *)(long)(argc - 1);
  int before = 0;
#pragma omp target map(from : before)
  before = 1;
  printf("before=%d\n", before);
  fflush(stdout);
#pragma omp target is_device_ptr(nowhere)
  *nowhere = 42;
  printf("after the faulting region: not reached on a GPU\n");
  return 0;
}
