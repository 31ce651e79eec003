// RULE: LIBOMPTARGET_INFO=4 dumps every device's mapping table after each construct, with size, reference counts and declaration
// FLAGS: -g
// ENV: LIBOMPTARGET_INFO=4
// EXPECT: b[4]=9
// EXPECT-STDERR: omptarget device 2 info: OpenMP Host-Device pointer mappings after block at dump_table.c:18:1:
// EXPECT-STDERR: omptarget device 2 info: Host Ptr           Target Ptr         Size (B) DynRefCount HoldRefCount Declaration
// EXPECT-STDERR:  20       1           0            b at dump_table.c:15:7
// EXPECT-STDERR: omptarget device 0 info: OpenMP Host-Device pointer mappings table empty
// EXPECT-STDERR: omptarget device 3 info: OpenMP Host-Device pointer mappings table empty
// REJECT-STDERR: Entering OpenMP
// REJECT-STDERR: Mapping exists
#include <stdio.h>

int main(void) {
  int b[5];
  for (int i = 0; i < 5; i++) b[i] = i;
#pragma omp target enter data map(to: b) device(2)
#pragma omp target map(tofrom: b) device(2)
  for (int i = 0; i < 5; i++) b[i] += 5;
#pragma omp target exit data map(from: b) device(2)
  printf("b[4]=%d\n", b[4]);
  for (int i = 0; i < 5; i++) if (b[i] != i + 5) return 1;
  return 0;
}
// NEEDS: 4 devices
