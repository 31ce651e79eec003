// RULE: 4 host threads each map their own array, run a kernel and unmap it, many times, without interfering
// EXPECT: threads=4 good=4
#include <omp.h>
#include <stdio.h>

int main(void) {
  int good = 0, threads = 0;
#pragma omp parallel num_threads(4) reduction(+: good, threads)
  {
    int t = omp_get_thread_num(), ok = 1;
    int a[64];
    for (int it = 0; it < 50; it++) {
      for (int i = 0; i < 64; i++) a[i] = t * 1000 + i;
#pragma omp target map(tofrom: a)
      for (int i = 0; i < 64; i++) a[i] += it;
      for (int i = 0; i < 64; i++) ok &= a[i] == t * 1000 + i + it;
    }
    good += ok;
    threads += 1;
  }
  printf("threads=%d good=%d\n", threads, good);
  return !(threads == 4 && good == 4);
}
