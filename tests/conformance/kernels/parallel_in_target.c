// RULE: a parallel region inside a target region runs each of its threads once, and omp_get_num_threads agrees
// EXPECT: threads_ok=1
// (-O2: clang-19's AMDGPU back end crashes on this kernel at -O1, in "Function register usage analysis".)
// FLAGS: -O2
#include <omp.h>
#include <stdio.h>

int main(void) {
  int marks[256] = {0};
  int threads = 0;
#pragma omp target map(tofrom : marks, threads)
#pragma omp parallel num_threads(8)
  {
    if (omp_get_thread_num() == 0)
      threads = omp_get_num_threads();
    marks[omp_get_thread_num()] += 1;
  }
  int threads_ok = threads >= 1 && threads <= 8;
  for (int t = 0; t < 256; t++)
    threads_ok &= marks[t] == (t < threads);
  printf("threads_ok=%d\n", threads_ok);
  return !threads_ok;
}
