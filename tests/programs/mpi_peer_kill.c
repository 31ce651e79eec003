// Two remote devices in two device processes (one host device each): a copy between them
// works, then the program kills the process of device 1 and copies again, both ways. Run under
// `mpirun --enable-recovery`: each copy must fail with the reason instead of waiting for ever
// (the survivor's half waits on a dead peer until the program says it is gone).
#include <omp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(void) {
  const size_t n = 16 << 20;
  int pids[2] = {0, 0};
  for (int d = 0; d < 2; d++) {
    int pid = 0;
#pragma omp target map(from : pid) device(d)
    pid = getpid();
    pids[d] = pid;
  }
  printf("device processes %d %d\n", pids[0], pids[1]);
  char *host = malloc(n), *back = malloc(n);
  for (size_t i = 0; i < n; i++)
    host[i] = (char)(i * 7);
  void *a = omp_target_alloc(n, 0), *b = omp_target_alloc(n, 1);
  int host_device = omp_get_initial_device();
  int rc = omp_target_memcpy(a, host, n, 0, 0, 0, host_device) ||
           omp_target_memcpy(b, a, n, 0, 0, 1, 0) ||
           omp_target_memcpy(back, b, n, 0, 0, host_device, 1);
  printf("copy between the device processes: %s\n",
         rc == 0 && memcmp(host, back, n) == 0 ? "correct" : "WRONG");
  fflush(stdout);
  kill(pids[1], SIGKILL);
  usleep(200000);
  double t = omp_get_wtime();
  rc = omp_target_memcpy(b, a, n, 0, 0, 1, 0);
  printf("copy to the dead device process: %d after %.1f s\n", rc, omp_get_wtime() - t);
  t = omp_get_wtime();
  rc = omp_target_memcpy(a, b, n, 0, 0, 0, 1);
  printf("copy from the dead device process: %d after %.1f s\n", rc, omp_get_wtime() - t);
  omp_target_free(a, 0);
  printf("done\n");
  return 0;
}
