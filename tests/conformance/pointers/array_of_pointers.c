// RULE: mapping an array of pointers together with each element's pointee attaches every device element to its device pointee
// EXPECT: b0[0]=11 b1[1]=14 ptrs=host
#include <stdio.h>

int main(void) {
  int b0[2] = {1, 2}, b1[2] = {3, 4};
  int *ptrs[2] = {b0, b1};
#pragma omp target data map(to: ptrs) map(tofrom: ptrs[0][0:2]) map(tofrom: ptrs[1][0:2])
  {
    b0[0] = 100; /* host only: the device copy keeps 1 */
#pragma omp target
    {
      ptrs[0][0] += 10;
      ptrs[1][1] += 10;
    }
  }
  int same = ptrs[0] == b0 && ptrs[1] == b1;
  printf("b0[0]=%d b1[1]=%d ptrs=%s\n", b0[0], b1[1], same ? "host" : "changed");
  return !(b0[0] == 11 && b1[1] == 14 && same);
}
