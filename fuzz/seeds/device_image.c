// A seed for the fuzzer's image corpora: kernels, declare-target globals (scalar, array,
// initialised, zeroed) and mapped arguments, with no parallel region, so that clang-22 images
// for GPUs link here against LLVM 19's device runtime (LLVM 22's is not packaged).
#include <stdio.h>

#pragma omp declare target
int counter = 7;
double table[64];
static const char label[] = "seed";
#pragma omp end declare target

int main(void) {
  int a[16], sum = 0;
  for (int i = 0; i < 16; i++) a[i] = i;
#pragma omp target map(tofrom : sum) map(to : a)
  {
    for (int i = 0; i < 16; i++) sum += a[i] + counter + label[0];
    table[3] = sum;
  }
#pragma omp target update from(table[0:64])
  printf("%d %g\n", sum, table[3]);
  return 0;
}
