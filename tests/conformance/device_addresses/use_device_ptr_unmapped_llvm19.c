// RULE: in a clang-19 program, use_device_ptr and use_device_addr on data that is not mapped give a NULL-based address (NULL for the pointer and the variable, near NULL for a section), as LLVM 19 does and its own tests expect
// COMPILERS: clang19
// EXPECT: ptr=null addr=null section=near-null
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
  // The section's base is NULL; clang-19 adds the section's offset to it.
  int near_null = (unsigned long)seen_a < 4096;
  printf("ptr=%s addr=%s section=%s\n", seen_p ? "kept" : "null", seen_x ? "kept" : "null",
         near_null ? "near-null" : "kept");
  return !(!seen_p && !seen_x && near_null);
}
