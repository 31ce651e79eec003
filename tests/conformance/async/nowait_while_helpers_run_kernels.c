// RULE: a thread creates target nowait tasks while libomp's hidden helper threads are running host kernels with teams and parallel regions (one helper per kernel, the creating thread's "shadow" helper among them): every task is created, runs and completes
// LLVM-DIFFERS: LLVM 19 runs each such kernel on the hidden helper thread itself; while the kernel's serialized teams region runs, that thread's task team is null, a target task created meanwhile copies it from its shadow helper, and libomp aborts (kmp_tasking.cpp:4368, task_team != NULL); we run the kernels on partner threads of our own
// EXPECT: rounds=3 kernels=24 late=3 ok=1
// FLAGS: -O2
#include <omp.h>
#include <stdio.h>

#define KERNELS 8
#define N 32

int main(void) {
  static int x[KERNELS][N];
  int late = 0, kernels = 0;
  for (int round = 0; round < 3; round++) {
    // More kernels than hidden helper workers (7): every helper is inside a kernel's teams
    // region for tens of milliseconds.
    for (int k = 0; k < KERNELS; k++) {
      int *p = x[k];
#pragma omp target teams distribute parallel for map(tofrom: p[0:N]) nowait
      for (int i = 0; i < N; i++) {
        for (volatile int spin = 0; spin < 300000; spin++) {
        }
        p[i]++;
      }
    }
    double t0 = omp_get_wtime();
    while (omp_get_wtime() - t0 < 0.004) {
    }
    // Created while the helpers run those kernels.
#pragma omp target map(tofrom: late) nowait
    late++;
#pragma omp taskwait
    kernels += KERNELS;
  }
  int ok = late == 3;
  for (int k = 0; k < KERNELS; k++)
    for (int i = 0; i < N; i++) ok &= x[k][i] == 3;
  printf("rounds=3 kernels=%d late=%d ok=%d\n", kernels, late, ok);
  return !ok;
}
