// RULE: a 3-D non-contiguous update from(a[0:2:2][1:2][0:2:3]) copies back exactly those 8 elements
// EXPECT: copied=8 a[2][2][3]=-223 a[1][1][0]=110
#include <stdio.h>

int main(void) {
  int a[3][4][5];
  for (int i = 0; i < 3; i++) for (int j = 0; j < 4; j++) for (int k = 0; k < 5; k++) a[i][j][k] = 100 * i + 10 * j + k;
#pragma omp target enter data map(to: a)
#pragma omp target
  for (int i = 0; i < 3; i++) for (int j = 0; j < 4; j++) for (int k = 0; k < 5; k++) a[i][j][k] = -a[i][j][k];
#pragma omp target update from(a[0:2:2][1:2][0:2:3])
#pragma omp target exit data map(delete: a)
  int copied = 0;
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 4; j++)
      for (int k = 0; k < 5; k++) {
        int v = 100 * i + 10 * j + k, sel = (i == 0 || i == 2) && (j == 1 || j == 2) && (k == 0 || k == 3);
        if (a[i][j][k] != (sel ? -v : v)) return 1;
        copied += sel;
      }
  printf("copied=%d a[2][2][3]=%d a[1][1][0]=%d\n", copied, a[2][2][3], a[1][1][0]);
  return copied != 8;
}
