// RULE: LIBOMPTARGET_INFO=8 reports creating and removing map entries with size, reference counts and name
// FLAGS: -g
// ENV: LIBOMPTARGET_INFO=8
// EXPECT: a[9]=18
// EXPECT-STDERR: omptarget device 0 info: Creating new map entry with HstPtrBase=0x
// EXPECT-STDERR: , Size=40, DynRefCount=1, HoldRefCount=0, Name=a
// EXPECT-STDERR: omptarget device 0 info: Removing map entry with HstPtrBegin=0x
// EXPECT-STDERR: , Size=40, Name=a
// REJECT-STDERR: Copying data
// REJECT-STDERR: Mapping exists
#include <stdio.h>

int main(void) {
  int a[10];
  for (int i = 0; i < 10; i++) a[i] = i;
#pragma omp target map(tofrom: a)
  for (int i = 0; i < 10; i++) a[i] *= 2;
  printf("a[9]=%d\n", a[9]);
  for (int i = 0; i < 10; i++) if (a[i] != 2 * i) return 1;
  return 0;
}
