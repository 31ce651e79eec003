// RULE: target update from(a[1:2][0:2:2]) copies back columns 0 and 2 of rows 1 and 2 only
// EXPECT: row0=[0,1,2,3,4,5] row1=[-10,11,-12,13,14,15] row2=[-20,21,-22,23,24,25]
#include <stdio.h>

int main(void) {
  int a[3][6];
  for (int i = 0; i < 3; i++) for (int j = 0; j < 6; j++) a[i][j] = 10 * i + j;
#pragma omp target enter data map(to: a)
#pragma omp target
  for (int i = 0; i < 3; i++) for (int j = 0; j < 6; j++) a[i][j] = -a[i][j];
#pragma omp target update from(a[1:2][0:2:2])
#pragma omp target exit data map(delete: a)
  printf("row0=[%d,%d,%d,%d,%d,%d] row1=[%d,%d,%d,%d,%d,%d] row2=[%d,%d,%d,%d,%d,%d]\n", a[0][0], a[0][1], a[0][2],
         a[0][3], a[0][4], a[0][5], a[1][0], a[1][1], a[1][2], a[1][3], a[1][4], a[1][5], a[2][0], a[2][1], a[2][2],
         a[2][3], a[2][4], a[2][5]);
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 6; j++) {
      int v = 10 * i + j;
      if (a[i][j] != ((i >= 1 && (j == 0 || j == 2)) ? -v : v)) return 1;
    }
  return 0;
}
