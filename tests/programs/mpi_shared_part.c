// The offloading half of mpi_shared_main.c, a shared library the program opens after it has
// initialised MPI itself: its image registers (and the runtime starts) when it is opened.
#include <omp.h>

int offload_sum(int n) {
  int devices = omp_get_num_devices();
  int sum = 0;
  for (int d = 0; d < devices; d++) {
#pragma omp target map(tofrom : sum) device(d)
    sum += n;
  }
  return devices;
}
