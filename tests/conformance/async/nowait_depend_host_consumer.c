// RULE: a host task with depend(in) on the output of a target nowait region sees the copied-back result
// EXPECT: host_task_saw=499500
#include <stdio.h>

int main(void) {
  int a[1000];
  long total = 0, seen = -1;
  for (int i = 0; i < 1000; i++) a[i] = 0;
#pragma omp parallel num_threads(2)
#pragma omp single
  {
#pragma omp target map(from: a) depend(out: a) nowait
    for (int i = 0; i < 1000; i++) a[i] = i;
#pragma omp task depend(in: a) shared(a, seen, total)
    {
      for (int i = 0; i < 1000; i++) total += a[i];
      seen = total;
    }
#pragma omp taskwait
  }
  printf("host_task_saw=%ld\n", seen);
  return seen != 499500;
}
