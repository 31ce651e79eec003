// RULE: rounds of two independent chains of target nowait depend regions with an update from each, a taskwait per round, then more offloaded work: every region of every round completes once
// EXPECT: b=15 c=30 total=23040
// FLAGS: -O2
#include <omp.h>
#include <stdio.h>

#define N 512
#pragma omp declare target
int step = 1;
#pragma omp end declare target

int main(void) {
  int b[N], c[N];
  for (int i = 0; i < N; i++) b[i] = c[i] = 0;
#pragma omp target enter data map(to: b, c)
  for (int round = 0; round < 3; round++) {
    for (int k = 0; k < 5; k++) {
#pragma omp target teams distribute parallel for nowait depend(inout: b[0]) map(alloc: b)
      for (int i = 0; i < N; i++) b[i] += step;
#pragma omp target teams distribute parallel for nowait depend(inout: c[0]) map(alloc: c)
      for (int i = 0; i < N; i++) c[i] += 2 * step;
    }
#pragma omp target update from(b) nowait depend(inout: b[0])
#pragma omp target update from(c) nowait depend(inout: c[0])
#pragma omp taskwait
    for (int i = 0; i < N; i++)
      if (b[i] != 5 * (round + 1) || c[i] != 10 * (round + 1)) {
        printf("round %d: b[%d]=%d c[%d]=%d\n", round, i, b[i], i, c[i]);
        return 1;
      }
  }
  long total = 0;
#pragma omp target teams distribute parallel for reduction(+: total) map(alloc: b, c)
  for (int i = 0; i < N; i++) total += b[i] + c[i];
#pragma omp target exit data map(release: b, c)
  printf("b=%d c=%d total=%ld\n", b[0], c[0], total);
  return total != 45L * N;
}
