// A program that uses MPI itself: it initialises MPI (at the thread level TEST_MPI_THREAD_LEVEL,
// default MPI_THREAD_MULTIPLE), then opens its offloading part (mpi_shared_part.c, path in
// argv[1]) and offloads to every device, then finalises MPI. The MPI plugin shares the
// program's MPI at MPI_THREAD_MULTIPLE and refuses a lower level with the reason; either way
// MPI_Finalize must not wait forever for the device processes.
// Declared here: Debian's libopenmpi3 ships the library without its headers.
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided);
int MPI_Finalize(void);

int main(int argc, char **argv) {
  const char *level = getenv("TEST_MPI_THREAD_LEVEL");
  int provided = -1;
  if (MPI_Init_thread(NULL, NULL, level ? atoi(level) : 3, &provided) != 0)
    return 10;
  void *part = dlopen(argv[1], RTLD_NOW);
  if (!part) {
    printf("dlopen: %s\n", dlerror());
    return 11;
  }
  int (*offload_sum)(int) = (int (*)(int))dlsym(part, "offload_sum");
  int devices = offload_sum(1);
  printf("shared MPI at level %d: %d devices\n", provided, devices);
  fflush(stdout);
  if (MPI_Finalize() != 0)
    return 12;
  printf("finalized\n");
  return 0;
}
