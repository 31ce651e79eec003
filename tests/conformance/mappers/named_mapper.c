// RULE: map(mapper(id), tofrom: s) uses the named mapper, which here maps only the first half of the pointee
// EXPECT: first=[10,11] second=[2,3] device_copy=yes
#include <stdint.h>
#include <stdio.h>

typedef struct { int n; int *p; } Buf;
#pragma omp declare mapper(half : Buf b) map(b, b.p[0:b.n / 2])

int main(void) {
  int data[4] = {0, 1, 2, 3};
  Buf b = {4, data};
  uintptr_t host = (uintptr_t)data;
  int moved = 0;
#pragma omp target map(mapper(half), tofrom: b) map(from: moved)
  {
    moved = (uintptr_t)b.p != host;
    for (int i = 0; i < b.n / 2; i++) b.p[i] += 10;
  }
  printf("first=[%d,%d] second=[%d,%d] device_copy=%s\n", data[0], data[1], data[2], data[3], moved ? "yes" : "no");
  return !(data[0] == 10 && data[1] == 11 && data[2] == 2 && data[3] == 3 && moved);
}
