// RULE: LIBOMPTARGET_INFO=32 reports each host-to-device and device-to-host copy with its size and name
// FLAGS: -g
// ENV: LIBOMPTARGET_INFO=32
// EXPECT: in=6 out[2]=8
// EXPECT-STDERR: omptarget device 0 info: Copying data from host to device, HstPtr=0x
// EXPECT-STDERR: , Size=12, Name=in_arr
// EXPECT-STDERR: omptarget device 0 info: Copying data from device to host, TgtPtr=0x
// EXPECT-STDERR: , Size=16, Name=out
// REJECT-STDERR: Name=out_never
// REJECT-STDERR: Creating new map entry
#include <stdio.h>

int main(void) {
  int in_arr[3] = {1, 2, 3}, out[4] = {0}, out_never[2] = {0};
#pragma omp target map(to: in_arr) map(from: out) map(alloc: out_never)
  {
    out_never[0] = 1;
    for (int i = 0; i < 4; i++) out[i] = in_arr[0] + in_arr[1] + in_arr[2] + i;
  }
  int in = in_arr[0] + in_arr[1] + in_arr[2];
  printf("in=%d out[2]=%d\n", in, out[2]);
  return !(out[2] == 8 && out_never[0] == 0);
}
