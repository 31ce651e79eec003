// Runs target regions with 600 arguments (implicitly firstprivate scalars) on a remote device
// for up to a minute, saying when it has started, so a test can kill a device process in the
// middle. Each launch request (8 bytes an argument) is over Open MPI's shared-memory eager
// limit (4 KiB): MPI completes its send only when the device process receives it.
#include <omp.h>
#include <stdio.h>

#define X10(M, p) M(p##0) M(p##1) M(p##2) M(p##3) M(p##4) M(p##5) M(p##6) M(p##7) M(p##8) M(p##9)
#define X100(M, p)                                                                               \
  X10(M, p##0) X10(M, p##1) X10(M, p##2) X10(M, p##3) X10(M, p##4) X10(M, p##5) X10(M, p##6)    \
  X10(M, p##7) X10(M, p##8) X10(M, p##9)
#define X600(M) X100(M, v1) X100(M, v2) X100(M, v3) X100(M, v4) X100(M, v5) X100(M, v6)
#define DECLARE(v) long v = 1;
#define ADD(v) s += v;

int main(void) {
  X600(DECLARE)
  long total = 0;
  double start = omp_get_wtime();
  printf("running on %d devices\n", omp_get_num_devices());
  fflush(stdout);
  while (omp_get_wtime() - start < 60) {
    long s = 0;
#pragma omp target map(from : s) device(0)
    { X600(ADD) }
    total += s;
  }
  printf("finished after %ld regions\n", total / 600);
  return 0;
}
