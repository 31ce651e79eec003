// RULE: a section of an array member (s.arr[2:3]) is mapped alone: only those elements travel, the others keep their host values
// EXPECT: arr=0,1,20,30,40,5 k=9
#include <stdio.h>

struct S { int k; int arr[6]; };

int main(void) {
  struct S s = {9, {0, 1, 2, 3, 4, 5}};
#pragma omp target map(tofrom: s.arr[2:3])
  for (int i = 2; i < 5; i++) s.arr[i] *= 10;
  printf("arr=%d,%d,%d,%d,%d,%d k=%d\n", s.arr[0], s.arr[1], s.arr[2], s.arr[3], s.arr[4], s.arr[5], s.k);
  return !(s.arr[1] == 1 && s.arr[2] == 20 && s.arr[4] == 40 && s.arr[5] == 5 && s.k == 9);
}
