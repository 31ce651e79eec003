// Independent nowait target regions on one device that use the same present array (each
// writes its own element): nothing orders one after another. On the emulated HSA runtime (with
// a delay per packet and one HSA queue) the test reads from the trace whether a kernel started
// before the one before it finished.
#include <omp.h>
#include <stdio.h>

#define REGIONS 6

int main(void) {
  int out[REGIONS] = {0};
#pragma omp target data map(tofrom : out[0:REGIONS])
  {
    for (int i = 0; i < REGIONS; i++) {
#pragma omp target nowait firstprivate(i)
      out[i] = 10 * i + 1;
    }
#pragma omp taskwait
  }
  int ok = 1;
  for (int i = 0; i < REGIONS; i++)
    ok &= out[i] == 10 * i + 1;
  printf("regions=%d %s\n", REGIONS, ok ? "ok" : "WRONG");
  return !ok;
}
