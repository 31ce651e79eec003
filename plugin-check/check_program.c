// The offloading program `omptarget-plugin-check --image` expects. Build it for the plugin's
// target, for example:
//   clang-19 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu check_program.c -o check-x86_64
//   clang-19 -fopenmp --offload-arch=sm_90 check_program.c -o check-sm_90
// The checker takes the device image out of the program and calls the kernel and reads the
// global below itself, by their names; the program also runs on its own through libomptarget.
#include <omp.h>
#include <stdio.h>

#define N 1024

#pragma omp declare target
int omptarget_plugin_check_global = 42;
#pragma omp end declare target

// Kernel arguments as the checker passes them: the device address of a[0:N].
void omptarget_plugin_check_kernel(int *a) {
#pragma omp target teams distribute parallel for map(tofrom : a[0:N])
  for (int i = 0; i < N; ++i)
    a[i] = 2 * a[i] + 1;
}

// Keeps a queue busy: runs until the host writes a non-zero value into `release[0]` (host
// memory the device reads), or for at most a minute. The checker allocates while it runs, to
// see which allocations wait for running kernels.
void omptarget_plugin_check_wait(int *release) {
#pragma omp target map(to : release[0:1])
  {
    double start = omp_get_wtime();
    for (;;) {
      int released;
#pragma omp atomic read
      released = release[0];
      if (released || omp_get_wtime() - start > 60.0)
        break;
    }
  }
}

int main(void) {
  int released = 1;
  omptarget_plugin_check_wait(&released);
  int a[N];
  for (int i = 0; i < N; ++i)
    a[i] = i;
  omptarget_plugin_check_kernel(a);
  for (int i = 0; i < N; ++i)
    if (a[i] != 2 * i + 1) {
      printf("FAIL: a[%d] = %d, expected %d\n", i, a[i], 2 * i + 1);
      return 1;
    }
  printf("PASS\n");
  return 0;
}
