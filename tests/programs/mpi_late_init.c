// A program that uses MPI itself in the usual way: its offload code is in the program, so its
// image registers and the runtime (with the MPI plugin) starts before main, and main then
// initialises MPI (at TEST_MPI_THREAD_LEVEL, default MPI_THREAD_MULTIPLE). The MPI plugin joins
// the job once MPI is initialised: at MPI_THREAD_MULTIPLE the remote devices then appear, below
// it the plugin refuses them with the reason. With TEST_NO_OFFLOAD set, the program never calls
// the runtime after MPI_Init, and computes for a second before MPI_Finalize (or, with
// TEST_FINALIZE_AT_ONCE, finalises at once). In every case MPI_Finalize must return: the plugin
// joined inside MPI_Init, and the device processes are told to finish.
// Declared here: Debian's libopenmpi3 ships the library without its headers.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided);
int MPI_Finalize(void);

int main(void) {
  const char *level = getenv("TEST_MPI_THREAD_LEVEL");
  int provided = -1;
  if (MPI_Init_thread(NULL, NULL, level ? atoi(level) : 3, &provided) != 0)
    return 10;
  if (!getenv("TEST_NO_OFFLOAD")) {
    int devices = omp_get_num_devices(), remote = 0;
    for (int d = 0; d < devices; d++) {
      int pid = 0;
#pragma omp target map(from : pid) device(d)
      pid = getpid();
      remote += pid != 0 && pid != getpid();
    }
    printf("late MPI at level %d: %d devices, %d ran in another process\n", provided,
           devices, remote);
  } else if (!getenv("TEST_FINALIZE_AT_ONCE")) {
    sleep(1);
  }
  fflush(stdout);
  if (MPI_Finalize() != 0)
    return 12;
  printf("finalized\n");
  return 0;
}
