// RULE: a 2-D strided update from(a[1:3][0:2:4]) of doubles copies back columns 0 and 4 of rows 1..3, 8 bytes each
// EXPECT: copied=6 a[1][0]=-10.5 a[3][4]=-34.5 a[0][0]=0.5 a[2][2]=22.5
#include <stdio.h>

int main(void) {
  double a[4][5];
  for (int i = 0; i < 4; i++) for (int j = 0; j < 5; j++) a[i][j] = 10 * i + j + 0.5;
#pragma omp target enter data map(to: a)
#pragma omp target
  for (int i = 0; i < 4; i++) for (int j = 0; j < 5; j++) a[i][j] = -a[i][j];
#pragma omp target update from(a[1:3][0:2:4])
#pragma omp target exit data map(delete: a)
  int copied = 0;
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 5; j++) {
      double v = 10 * i + j + 0.5;
      int sel = i >= 1 && (j == 0 || j == 4);
      if (a[i][j] != (sel ? -v : v)) return 1;
      copied += sel;
    }
  printf("copied=%d a[1][0]=%g a[3][4]=%g a[0][0]=%g a[2][2]=%g\n", copied, a[1][0], a[3][4], a[0][0], a[2][2]);
  return copied != 6;
}
