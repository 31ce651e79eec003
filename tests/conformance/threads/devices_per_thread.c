// RULE: 4 host threads each using a different device (0..3) keep separate device copies of the same global array
// EXPECT: results=0,1,2,3 host=9
#include <omp.h>
#include <stdio.h>

int g[16];

int main(void) {
  int res[4] = {-1, -1, -1, -1};
  for (int i = 0; i < 16; i++) g[i] = 9;
#pragma omp parallel num_threads(4)
  {
    int t = omp_get_thread_num();
#pragma omp target enter data map(alloc: g) device(t)
    for (int it = 0; it < 10; it++) {
#pragma omp target map(to: t) device(t)
      for (int i = 0; i < 16; i++) g[i] = t;
    }
    int r = -1;
#pragma omp target map(from: r) device(t)
    r = g[15];
    res[t] = r;
#pragma omp target exit data map(delete: g) device(t)
  }
  printf("results=%d,%d,%d,%d host=%d\n", res[0], res[1], res[2], res[3], g[0]);
  return !(res[0] == 0 && res[1] == 1 && res[2] == 2 && res[3] == 3 && g[0] == 9);
}
// NEEDS: 4 devices
