// RULE: target update to/from on a section of a declare target array moves only that section
// EXPECT: dev[0]=0 dev[2]=20 host[5]=555 host[1]=1
#include <stdio.h>

#pragma omp declare target
int arr[8] = {0, 1, 2, 3, 4, 5, 6, 7};
#pragma omp end declare target

int main(void) {
  int d0 = -1, d2 = -1;
  for (int i = 0; i < 8; i++) arr[i] *= 10;
#pragma omp target update to(arr[2:2])
#pragma omp target map(from: d0, d2)
  {
    d0 = arr[0];
    d2 = arr[2];
    for (int i = 0; i < 8; i++) arr[i] = 111 * i;
  }
#pragma omp target update from(arr[5:1])
  printf("dev[0]=%d dev[2]=%d host[5]=%d host[1]=%d\n", d0, d2, arr[5], arr[1] / 10);
  return !(d0 == 0 && d2 == 20 && arr[5] == 555 && arr[1] == 10 && arr[6] == 60);
}
