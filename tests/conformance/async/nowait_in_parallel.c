// RULE: each thread of omp parallel launches target nowait regions on its own data and waits with taskwait
// EXPECT: threads=4 ok=4
#include <omp.h>
#include <stdio.h>

int main(void) {
  int res[4][32], ok = 0, threads = 0;
#pragma omp parallel num_threads(4) reduction(+: ok, threads)
  {
    int t = omp_get_thread_num();
    int *r = res[t];
    for (int i = 0; i < 32; i++) r[i] = t;
#pragma omp target map(tofrom: r[0:16]) nowait
    for (int i = 0; i < 16; i++) r[i] = r[i] * 100 + i;
#pragma omp target map(tofrom: r[16:16]) nowait
    for (int i = 16; i < 32; i++) r[i] = r[i] * 100 + i;
#pragma omp taskwait
    int good = 1;
    for (int i = 0; i < 32; i++) good &= r[i] == t * 100 + i;
    ok += good;
    threads += 1;
  }
  printf("threads=%d ok=%d\n", threads, ok);
  return !(threads == 4 && ok == 4);
}
