// Independent nowait target regions on one device, each on its own data, already present:
// each region is a kernel only, so nothing orders one after another. On the emulated HSA
// runtime (with a delay per packet and one HSA queue) the test reads from the trace whether a
// kernel started before the one before it finished.
#include <omp.h>
#include <stdio.h>

#define REGIONS 6
#define N 16

int main(void) {
  int out[REGIONS][N] = {{0}};
  for (int i = 0; i < REGIONS; i++) {
#pragma omp target enter data map(to : out[i][0:N])
  }
  for (int i = 0; i < REGIONS; i++) {
#pragma omp target nowait map(tofrom : out[i][0:N])
    out[i][0] = 10 * i + 1;
  }
#pragma omp taskwait
  for (int i = 0; i < REGIONS; i++) {
#pragma omp target exit data map(from : out[i][0:N])
  }
  int ok = 1;
  for (int i = 0; i < REGIONS; i++)
    ok &= out[i][0] == 10 * i + 1;
  printf("regions=%d %s\n", REGIONS, ok ? "ok" : "WRONG");
  return !ok;
}
