// RULE: LIBOMPTARGET_INFO=2 reports each lookup of an existing mapping with the reference count and its change
// FLAGS: -g
// ENV: LIBOMPTARGET_INFO=2
// EXPECT: a[0]=1 a[9]=10
// EXPECT-STDERR: omptarget device 0 info: Mapping exists with HstPtrBegin=0x
// EXPECT-STDERR: , Size=40, DynRefCount=2 (incremented), HoldRefCount=0, Name=a
// EXPECT-STDERR: , Size=40, DynRefCount=2 (update suppressed), HoldRefCount=0
// EXPECT-STDERR: , Size=40, DynRefCount=1 (decremented), HoldRefCount=0
// EXPECT-STDERR: , Size=40, DynRefCount=0 (decremented, delayed deletion), HoldRefCount=0
// REJECT-STDERR: Creating new map entry
// REJECT-STDERR: Entering OpenMP kernel
// REJECT-STDERR: Copying data
#include <stdio.h>

int main(void) {
  int a[10];
  for (int i = 0; i < 10; i++) a[i] = i;
#pragma omp target enter data map(to: a)
#pragma omp target map(tofrom: a)
  for (int i = 0; i < 10; i++) a[i] += 1;
#pragma omp target exit data map(from: a)
  printf("a[0]=%d a[9]=%d\n", a[0], a[9]);
  for (int i = 0; i < 10; i++) if (a[i] != i + 1) return 1;
  return 0;
}
