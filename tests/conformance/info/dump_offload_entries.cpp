// RULE: OMPTARGET_DUMP_OFFLOAD_ENTRIES=N prints device N's offload entries once its images are loaded, in LLVM's words
// ENV: OMPTARGET_DUMP_OFFLOAD_ENTRIES=0
// EXPECT: 7
// EXPECT-STDERR: Device 0 offload entries:
// EXPECT-STDERR:   global var.: s
// EXPECT-STDERR:        kernel: __omp_offloading_
// LLVM-DIFFERS: LLVM 19 prints the heading only (its device's entry list stays empty); we list the entries as LLVM's own test of the variable (offloading/ctor_dtor.cpp of later releases) expects
#include <cstdio>
struct S {
  S() : i(7) {}
  int foo() { return i; }
  int i;
};
S s;
#pragma omp declare target(s)

int main() {
  int r;
#pragma omp target map(from : r)
  r = s.foo();
  printf("%i\n", r);
}
