// Remote-device costs through the MPI plugin (run by mpi-bench under mpirun, with one device
// process): an empty target region (no data) and one with a scalar map(tofrom:), each the best
// of `latency_rounds` rounds of `n`, and the bandwidth of a map(tofrom:) of `bytes` (default
// 1 GiB: that many bytes each way), the best of `rounds`.
//
// The program is an MPI program itself: before offloading, it times MPI's own 1-byte round
// trip with its device process (rank 1, which answers `n` * (latency_rounds + 1) ping-pongs
// before anything else when OMPTARGET_MPI_DEVICE_ECHO says so), so that both latencies are measured between
// the same two processes. Declared here: Debian's libopenmpi3 ships no headers.
#include "common.h"
#include <omp.h>
#include <string.h>

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided);
int MPI_Finalize(void);
int MPI_Send(const void *buf, int count, void *type, int dest, int tag, void *comm);
int MPI_Recv(void *buf, int count, void *type, int source, int tag, void *comm, void *status);
extern char ompi_mpi_comm_world[], ompi_mpi_byte[];

int main(int argc, char **argv) {
  long n = arg_or(argc, argv, 1, 20000);
  long bytes = arg_or(argc, argv, 2, 1L << 30);
  long rounds = arg_or(argc, argv, 3, 4);
  long latency_rounds = arg_or(argc, argv, 4, 10);
  int provided = 0;
  if (MPI_Init_thread(NULL, NULL, 3, &provided) != 0 || provided < 3)
    return 3;
  char byte = 0;
  double best_round_trip = 1e300;
  for (long r = 0; r <= latency_rounds; r++) { // a warm-up round, then the timed ones
    double start = now_ns();
    for (long i = 0; i < n; i++) {
      MPI_Send(&byte, 1, ompi_mpi_byte, 1, 1, ompi_mpi_comm_world);
      MPI_Recv(&byte, 1, ompi_mpi_byte, 1, 2, ompi_mpi_comm_world, NULL);
    }
    double ns = (now_ns() - start) / n;
    if (r > 0 && ns < best_round_trip) best_round_trip = ns;
  }
  result("mpi_round_trip", best_round_trip, "ns/op");
  // The MPI plugin's thread has been joining the job meanwhile, without spinning; this waits
  // for it.
  if (omp_get_num_devices() < 1)
    return 4;
  int x = 0;
  for (int i = 0; i < 200; i++) { // warm-up: image loaded, pools filled
#pragma omp target map(tofrom: x)
    x++;
  }
  double best_empty = 1e300, best_scalar = 1e300, t0, t1;
  for (long r = 0; r < latency_rounds; r++) {
    t0 = now_ns();
    for (long i = 0; i < n; i++) {
#pragma omp target
      { }
    }
    t1 = now_ns();
    if ((t1 - t0) / n < best_empty) best_empty = (t1 - t0) / n;
    t0 = now_ns();
    for (long i = 0; i < n; i++) {
#pragma omp target map(tofrom: x)
      x++;
    }
    t1 = now_ns();
    if ((t1 - t0) / n < best_scalar) best_scalar = (t1 - t0) / n;
  }
  if (x != 200 + n * latency_rounds) return 1;
  result("mpi_empty_region", best_empty, "ns/op");
  result("mpi_scalar_region", best_scalar, "ns/op");

  char *a = malloc(bytes);
  memset(a, 1, bytes);
  double best = 1e300;
  for (long r = 0; r < rounds; r++) {
    t0 = now_ns();
#pragma omp target map(tofrom: a[0:bytes])
    a[r] += 1;
    t1 = now_ns();
    if (t1 - t0 < best) best = t1 - t0;
  }
  for (long r = 0; r < rounds; r++)
    if (a[r] != 2) return 2;
  // Bytes moved both ways, per second of the best round.
  result("mpi_map_tofrom_bandwidth", 2.0 * bytes / best, "GB/s");
  free(a);
  return MPI_Finalize() != 0;
}
