// RULE: omp_target_memcpy_async with a depend object waits for the sibling task that writes the source
// EXPECT: rc=0 back[0]=1000 back[31]=1031
#include <omp.h>
#include <stdio.h>
#include <unistd.h>

int main(void) {
  int host = omp_get_initial_device(), dev = 0;
  int a[32], back[32], rc = -1;
  for (int i = 0; i < 32; i++) { a[i] = -1; back[i] = 0; }
  int *d = (int *)omp_target_alloc(sizeof a, dev);
  omp_depend_t obj;
#pragma omp depobj(obj) depend(inout: a)
#pragma omp parallel num_threads(2)
#pragma omp single
  {
#pragma omp task depend(out: a) shared(a)
    {
      usleep(20000);
      for (int i = 0; i < 32; i++) a[i] = 1000 + i;
    }
    rc = omp_target_memcpy_async(d, a, sizeof a, 0, 0, dev, host, 1, &obj);
#pragma omp taskwait
  }
#pragma omp depobj(obj) destroy
  omp_target_memcpy(back, d, sizeof back, 0, 0, host, dev);
  omp_target_free(d, dev);
  printf("rc=%d back[0]=%d back[31]=%d\n", rc, back[0], back[31]);
  for (int i = 0; i < 32; i++) if (back[i] != 1000 + i) return 1;
  return rc != 0;
}
