// RULE: LIBOMPTARGET_INFO=-1 turns on every kind of message at once
// FLAGS: -g
// ENV: LIBOMPTARGET_INFO=-1
// EXPECT: x=5
// EXPECT-STDERR: omptarget device 0 info: Entering OpenMP kernel at all_bits.c:19:1 with 1 arguments:
// EXPECT-STDERR: omptarget device 0 info: tofrom(x)[4] 
// EXPECT-STDERR: omptarget device 0 info: Creating new map entry with HstPtrBase=0x
// EXPECT-STDERR: omptarget device 0 info: Copying data from host to device, HstPtr=0x
// EXPECT-STDERR: , Size=4, DynRefCount=1 (update suppressed), HoldRefCount=0
// EXPECT-STDERR: "PluginInterface" device 0 info: Launching kernel __omp_offloading_
// EXPECT-STDERR: , Size=4, DynRefCount=0 (decremented, delayed deletion), HoldRefCount=0
// EXPECT-STDERR: omptarget device 0 info: Copying data from device to host, TgtPtr=0x
// EXPECT-STDERR: omptarget device 0 info: Removing map entry with HstPtrBegin=0x
// EXPECT-STDERR: omptarget device 0 info: OpenMP Host-Device pointer mappings table empty
#include <stdio.h>

int main(void) {
  int x = 4;
#pragma omp target map(tofrom: x)
  x += 1;
  printf("x=%d\n", x);
  return x != 5;
}
