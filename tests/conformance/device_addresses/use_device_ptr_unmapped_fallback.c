// RULE: in a clang-22 program, use_device_ptr and use_device_addr on data that is not mapped keep the host address (OpenMP 5.1: the program vouches that it is a valid device address), as LLVM 22 does
// COMPILERS: clang22
// EXPECT: ptr=kept addr=kept section=kept
#include <stdio.h>

int x;

int main(void) {
  int a[8];
  int *p = &a[0];
  int *seen_p = 0, *seen_x = 0, *seen_a = 0;
#pragma omp target data use_device_ptr(p)
  seen_p = p;
#pragma omp target data use_device_addr(x)
  seen_x = &x;
#pragma omp target data use_device_addr(a[2:4])
  seen_a = &a[2];
  printf("ptr=%s addr=%s section=%s\n", seen_p == &a[0] ? "kept" : "lost",
         seen_x == &x ? "kept" : "lost", seen_a == &a[2] ? "kept" : "lost");
  return !(seen_p == &a[0] && seen_x == &x && seen_a == &a[2]);
}
