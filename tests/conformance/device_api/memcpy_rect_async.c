// RULE: omp_target_memcpy_rect_async copies a 2-D sub-rectangle, ordered after a depend object's task, complete after taskwait
// EXPECT: rc=0 d[1][1]=11 d[2][3]=23 d[0][0]=0
#include <omp.h>
#include <stdio.h>
#include <unistd.h>

int main(void) {
  int host = omp_get_initial_device(), dev = 0;
  int a[4][4], out[4][4], rc = -1;
  for (int i = 0; i < 4; i++) for (int j = 0; j < 4; j++) a[i][j] = 0;
  int *d = (int *)omp_target_alloc(sizeof a, dev);
  omp_target_memset(d, 0, sizeof a, dev);
  size_t vol[2] = {2, 3}, off[2] = {1, 1}, dims[2] = {4, 4};
  omp_depend_t obj;
#pragma omp depobj(obj) depend(in: a)
#pragma omp parallel num_threads(2)
#pragma omp single
  {
#pragma omp task depend(out: a) shared(a)
    {
      usleep(20000);
      for (int i = 0; i < 4; i++) for (int j = 0; j < 4; j++) a[i][j] = 10 * i + j;
    }
    rc = omp_target_memcpy_rect_async(d, a, sizeof(int), 2, vol, off, off, dims, dims, dev, host, 1, &obj);
#pragma omp taskwait
  }
#pragma omp depobj(obj) destroy
  omp_target_memcpy(out, d, sizeof out, 0, 0, host, dev);
  omp_target_free(d, dev);
  printf("rc=%d d[1][1]=%d d[2][3]=%d d[0][0]=%d\n", rc, out[1][1], out[2][3], out[0][0]);
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++)
      if (out[i][j] != ((i >= 1 && i <= 2 && j >= 1) ? 10 * i + j : 0)) return 1;
  return rc != 0;
}
