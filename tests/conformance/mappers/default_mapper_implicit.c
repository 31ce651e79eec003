// RULE: the default mapper of a struct type is used for a struct variable referenced in a target region without any map clause
// EXPECT: sum=28 buf[7]=70 device_copy=yes
#include <stdint.h>
#include <stdio.h>

struct S { int len; int *buf; };
#pragma omp declare mapper(struct S s) map(tofrom: s, s.buf[0:s.len])

int main(void) {
  int storage[8];
  for (int i = 0; i < 8; i++) storage[i] = i;
  struct S s = {8, storage};
  int sum = 0, moved = 0;
  uintptr_t host = (uintptr_t)storage;
#pragma omp target map(tofrom: sum, moved)
  {
    moved = (uintptr_t)s.buf != host;
    for (int i = 0; i < s.len; i++) { sum += s.buf[i]; s.buf[i] *= 10; }
  }
  printf("sum=%d buf[7]=%d device_copy=%s\n", sum, storage[7], moved ? "yes" : "no");
  return !(sum == 28 && storage[7] == 70 && storage[1] == 10 && moved);
}
