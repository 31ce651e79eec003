// RULE: target update to(a[0:2:2][0:3:2]) sends rows 0 and 2, columns 0, 2 and 4, and no other element
// EXPECT: sent=6 d[0][0]=100 d[2][4]=124 d[1][0]=10 d[0][1]=1
#include <stdio.h>

int main(void) {
  int a[4][6], d[4][6];
  for (int i = 0; i < 4; i++) for (int j = 0; j < 6; j++) a[i][j] = 10 * i + j;
#pragma omp target enter data map(to: a)
  for (int i = 0; i < 4; i++) for (int j = 0; j < 6; j++) a[i][j] += 100;
#pragma omp target update to(a[0:2:2][0:3:2])
#pragma omp target map(from: d)
  for (int i = 0; i < 4; i++) for (int j = 0; j < 6; j++) d[i][j] = a[i][j];
#pragma omp target exit data map(delete: a)
  int sent = 0;
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 6; j++) {
      int s = (i == 0 || i == 2) && (j % 2 == 0);
      if (d[i][j] != 10 * i + j + (s ? 100 : 0)) return 1;
      sent += s;
    }
  printf("sent=%d d[0][0]=%d d[2][4]=%d d[1][0]=%d d[0][1]=%d\n", sent, d[0][0], d[2][4], d[1][0], d[0][1]);
  return sent != 6;
}
