// RULE: LIBOMPTARGET_INFO=40 (8|32) prints map entry changes and data copies but no kernel arguments or table dumps
// FLAGS: -g
// ENV: LIBOMPTARGET_INFO=40
// EXPECT: y=21
// EXPECT-STDERR: Creating new map entry with HstPtrBase=
// EXPECT-STDERR: Copying data from host to device, HstPtr=
// EXPECT-STDERR: Copying data from device to host, TgtPtr=
// EXPECT-STDERR: Removing map entry with HstPtrBegin=
// REJECT-STDERR: Entering OpenMP kernel
// REJECT-STDERR: pointer mappings
// REJECT-STDERR: Mapping exists
// REJECT-STDERR: Launching kernel
#include <stdio.h>

int main(void) {
  int y = 20;
#pragma omp target map(tofrom: y)
  y += 1;
  printf("y=%d\n", y);
  return y != 21;
}
