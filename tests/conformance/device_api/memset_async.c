// RULE: omp_target_memset_async fills device memory after taskwait, with and without a depend object ordering it after an earlier fill
// EXPECT: ret=same first=0x01010101 last=0x02020202
#include <omp.h>
#include <stdio.h>

int main(void) {
  int dev = 0;
  unsigned *d = (unsigned *)omp_target_alloc(16 * sizeof(unsigned), dev);
  unsigned tok = 0;
  void *r = omp_target_memset_async(d, 0x01, 16 * sizeof(unsigned), dev, 0, NULL);
#pragma omp taskwait
  omp_depend_t obj;
#pragma omp depobj(obj) depend(inout: tok)
#pragma omp parallel num_threads(2)
#pragma omp single
  {
#pragma omp task depend(out: tok) shared(d)
    omp_target_memset(d + 8, 0x03, 8 * sizeof(unsigned), dev);
    // ordered after the task above: the last half ends up 0x02
    omp_target_memset_async(d + 8, 0x02, 8 * sizeof(unsigned), dev, 1, &obj);
#pragma omp taskwait
  }
#pragma omp depobj(obj) destroy
  unsigned first = 0, last = 0;
#pragma omp target is_device_ptr(d) map(from: first, last) device(dev)
  { first = d[0]; last = d[15]; }
  omp_target_free(d, dev);
  printf("ret=%s first=0x%08x last=0x%08x\n", r == d ? "same" : "other", first, last);
  return !(r == d && first == 0x01010101u && last == 0x02020202u);
}
