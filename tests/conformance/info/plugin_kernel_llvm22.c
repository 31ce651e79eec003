// RULE: LIBOMPTARGET_INFO=16 makes the plugin report each kernel launch with its name, blocks, threads and mode, in LLVM 22's wording (all three dimensions) for a clang-22 program
// NOT-ON-EMULATOR: the launch line it expects is the host device's one team of one thread
// COMPILERS: clang22
// FLAGS: -g
// ENV: LIBOMPTARGET_INFO=16
// EXPECT: x=3
// EXPECT-STDERR: "PluginInterface" device 1 info: Launching kernel __omp_offloading_
// EXPECT-STDERR: _main_l15 with [1,1,1] blocks and [1,1,1] threads in Generic mode
// REJECT-STDERR: Entering OpenMP kernel
// REJECT-STDERR: Copying data
#include <stdio.h>

int main(void) {
  int x = 1;
#pragma omp target map(tofrom: x) device(1)
  x += 2;
  printf("x=%d\n", x);
  return x != 3;
}
// NOT-ON-GPU: it expects the host device's launch line (one team of one thread) for device 1
