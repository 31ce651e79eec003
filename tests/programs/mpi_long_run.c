// Runs target regions on a remote device for up to a minute, saying when it has started, so a
// test can kill a device process in the middle.
#include <omp.h>
#include <stdio.h>

int main(void) {
  double start = omp_get_wtime();
  int x = 0;
  printf("running on %d devices\n", omp_get_num_devices());
  fflush(stdout);
  while (omp_get_wtime() - start < 60) {
#pragma omp target map(tofrom : x) device(0)
    x++;
  }
  printf("finished after %d regions\n", x);
  return 0;
}
