// RULE: each thread's enter data / kernel / update from / exit data sequence on its own heap buffer is independent of the other threads
// EXPECT: threads=4 good=4 leftover=0
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  int good = 0, threads = 0, leftover = 0;
#pragma omp parallel num_threads(4) reduction(+: good, threads, leftover)
  {
    int t = omp_get_thread_num(), ok = 1;
    for (int it = 0; it < 20; it++) {
      int n = 100 + t;
      int *p = (int *)malloc(n * sizeof(int));
      for (int i = 0; i < n; i++) p[i] = i;
#pragma omp target enter data map(to: p[0:n])
#pragma omp target map(to: n)
      for (int i = 0; i < n; i++) p[i] = p[i] * 2 + t;
#pragma omp target update from(p[0:n])
      for (int i = 0; i < n; i++) ok &= p[i] == 2 * i + t;
#pragma omp target exit data map(delete: p[0:n])
      leftover += omp_target_is_present(p, omp_get_default_device());
      free(p);
    }
    good += ok;
    threads += 1;
  }
  printf("threads=%d good=%d leftover=%d\n", threads, good, leftover);
  return !(threads == 4 && good == 4 && leftover == 0);
}
