// RULE: declare target indirect functions run in a kernel when called through host function pointers mapped to the device
// NOT-ON-MPI: indirect calls: the program's function pointers are addresses in another process
// EXPECT: results 30 20 40
// COMPILERS: clang22
// (clang 19's host offload entries can pair the indirect functions' names with each other's
// addresses, depending on the source's file id: built from another directory, the entry named
// thrice held quadruple's address, and LLVM 19's runtime, like ours, then called the wrong
// functions)
#include <stdio.h>

int twice(int x) { return 2 * x; }
int thrice(int x) { return 3 * x; }
int quadruple(int x) { return 4 * x; }
#pragma omp declare target to(twice, thrice, quadruple) indirect

typedef int (*operation)(int);

int main(void) {
  operation ops[3] = {thrice, twice, quadruple};
  int out[3] = {0, 0, 0};
#pragma omp target map(to : ops) map(from : out)
  for (int i = 0; i < 3; i++)
    out[i] = ops[i](10);
  printf("results %d %d %d\n", out[0], out[1], out[2]);
  return !(out[0] == 30 && out[1] == 20 && out[2] == 40);
}
// NEEDS: nvlink
