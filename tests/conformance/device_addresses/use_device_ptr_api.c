// RULE: the address use_device_ptr gives equals omp_get_mapped_ptr of the host pointer, and omp_target_memcpy into it reaches the mapped data
// EXPECT: same=yes a[2]=77
#include <omp.h>
#include <stdio.h>

int main(void) {
  int buf[4] = {0, 0, 0, 0};
  int *p = buf;
  int seven = 77, ok = 0;
#pragma omp target enter data map(to: buf)
  void *mapped = omp_get_mapped_ptr(buf, omp_get_default_device());
#pragma omp target data use_device_ptr(p)
  {
    ok = (void *)p == mapped;
    omp_target_memcpy(p + 2, &seven, sizeof seven, 0, 0, omp_get_default_device(), omp_get_initial_device());
  }
#pragma omp target exit data map(from: buf)
  printf("same=%s a[2]=%d\n", ok ? "yes" : "no", buf[2]);
  return !(ok && buf[2] == 77 && buf[0] == 0);
}
