// RULE: 64 target nowait regions in flight at once, each writing its own slot, all complete by taskwait
// EXPECT: slots=64 sum=2080
#include <stdio.h>

int main(void) {
  int out[64];
  for (int i = 0; i < 64; i++) out[i] = 0;
#pragma omp parallel num_threads(2)
#pragma omp single
  {
    for (int i = 0; i < 64; i++) {
#pragma omp target map(tofrom: out[i:1]) firstprivate(i) nowait
      out[i] = i + 1;
    }
#pragma omp taskwait
  }
  int slots = 0, sum = 0;
  for (int i = 0; i < 64; i++) { slots += out[i] == i + 1; sum += out[i]; }
  printf("slots=%d sum=%d\n", slots, sum);
  return !(slots == 64 && sum == 2080);
}
