// Runs target regions on a remote device for up to a minute, saying when it has started, so a
// test can kill a device process in the middle. An argument gives the bytes each region maps
// to and from the device (default: one int), large enough to need MPI's rendezvous.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) / (long)sizeof(int) : 1;
  if (n < 1)
    n = 1;
  int *x = calloc(n, sizeof *x);
  double start = omp_get_wtime();
  printf("running on %d devices\n", omp_get_num_devices());
  fflush(stdout);
  while (omp_get_wtime() - start < 60) {
#pragma omp target map(tofrom : x[0 : n]) device(0)
    x[0]++;
  }
  printf("finished after %d regions\n", x[0]);
  free(x);
  return 0;
}
