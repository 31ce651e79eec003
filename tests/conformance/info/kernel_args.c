// RULE: LIBOMPTARGET_INFO=1 prints each construct's location and its map arguments (type, name, size), and nothing about mapping entries
// FLAGS: -g
// ENV: LIBOMPTARGET_INFO=1
// EXPECT: x=11 a[9]=10
// EXPECT-STDERR: omptarget device 0 info: Entering OpenMP data region with being_mapper at kernel_args.c:19:1 with 1 arguments:
// EXPECT-STDERR: omptarget device 0 info: to(a)[40] 
// EXPECT-STDERR: omptarget device 0 info: Entering OpenMP kernel at kernel_args.c:20:1 with 2 arguments:
// EXPECT-STDERR: omptarget device 0 info: tofrom(x)[4] 
// EXPECT-STDERR: omptarget device 0 info: tofrom(a)[40] (implicit)
// EXPECT-STDERR: omptarget device 0 info: Exiting OpenMP data region with end_mapper at kernel_args.c:26:1 with 1 arguments:
// EXPECT-STDERR: omptarget device 0 info: from(a)[40] 
// REJECT-STDERR: Mapping exists
// REJECT-STDERR: Creating new map entry
#include <stdio.h>

int main(void) {
  int x = 10, a[10];
  for (int i = 0; i < 10; i++) a[i] = i;
#pragma omp target enter data map(to: a)
#pragma omp target map(tofrom: x)
  {
    x += 1;
    for (int i = 0; i < 10; i++) a[i] += 1;
  }
  // a stays mapped; exit data brings it back
#pragma omp target exit data map(from: a)
  printf("x=%d a[9]=%d\n", x, a[9]);
  return !(x == 11 && a[9] == 10);
}
