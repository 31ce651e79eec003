// The offloading program `omptarget-plugin-check --image` expects. Build it for the plugin's
// target, for example:
//   clang-19 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu check_program.c -o check-x86_64
//   clang-19 -fopenmp --offload-arch=sm_90 check_program.c -o check-sm_90
// The checker takes the device image out of the program and calls the kernel and reads the
// global below itself, by their names; the program also runs on its own through libomptarget.
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

int main(void) {
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
