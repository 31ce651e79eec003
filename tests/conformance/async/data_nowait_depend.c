// RULE: target enter data / update / exit data with nowait and depend are ordered with the kernels between them
// EXPECT: a[0]=3 a[63]=129 present_after=0
#include <omp.h>
#include <stdio.h>

int main(void) {
  int a[64];
  for (int i = 0; i < 64; i++) a[i] = i;
#pragma omp parallel num_threads(2)
#pragma omp single
  {
#pragma omp target enter data map(to: a) depend(out: a) nowait
#pragma omp target depend(inout: a) nowait
    for (int i = 0; i < 64; i++) a[i] *= 2;
#pragma omp target update from(a) depend(inout: a) nowait
#pragma omp task depend(inout: a) shared(a)
    for (int i = 0; i < 64; i++) a[i] += 1;
#pragma omp target update to(a) depend(inout: a) nowait
#pragma omp target depend(inout: a) nowait
    for (int i = 0; i < 64; i++) a[i] += 2;
#pragma omp target exit data map(from: a) depend(in: a) nowait
#pragma omp taskwait
  }
  int present = omp_target_is_present(a, omp_get_default_device());
  printf("a[0]=%d a[63]=%d present_after=%d\n", a[0], a[63], present);
  for (int i = 0; i < 64; i++) if (a[i] != 2 * i + 3) return 1;
  return present != 0;
}
