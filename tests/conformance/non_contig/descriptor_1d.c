// RULE: a NON_CONTIG update-from entry with the descriptor {offset 0, count 3, stride 12}, {0, 1, 4} copies back elements 0, 3 and 6 only
// EXPECT: host=[-10,11,12,-13,14,15,-16,17,18]
#include <stdint.h>
#include <stdio.h>

// the descriptor and entry point that clang-22 uses for `target update from(a[0:3:3])`
struct non_contig { int64_t offset, count, stride; };
void __tgt_target_data_update_mapper(void *loc, int64_t dev, int32_t n, void **bases, void **args, int64_t *sizes,
                                     int64_t *types, void **names, void **mappers);
#define OMP_MAP_FROM 0x2
#define OMP_MAP_NON_CONTIG 0x100000000000LL

int main(void) {
  int a[9];
  for (int i = 0; i < 9; i++) a[i] = 10 + i;
#pragma omp target enter data map(to: a)
#pragma omp target
  for (int i = 0; i < 9; i++) a[i] = -a[i];
  struct non_contig dims[2] = {{0, 3, 12}, {0, 1, 4}};
  void *base = a, *arg = dims;
  int64_t size = 2, type = OMP_MAP_FROM | OMP_MAP_NON_CONTIG;
  __tgt_target_data_update_mapper(NULL, -1, 1, &base, &arg, &size, &type, NULL, NULL);
#pragma omp target exit data map(delete: a)
  printf("host=[%d,%d,%d,%d,%d,%d,%d,%d,%d]\n", a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8]);
  for (int i = 0; i < 9; i++) if (a[i] != ((i % 3 == 0) ? -(10 + i) : 10 + i)) return 1;
  return 0;
}
