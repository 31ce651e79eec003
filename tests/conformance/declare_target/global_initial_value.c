// RULE: a declare target global starts on the device with its static initial value
// EXPECT: device=123 arr[3]=4
#include <stdio.h>

#pragma omp declare target
int g = 123;
int arr[4] = {1, 2, 3, 4};
#pragma omp end declare target

int main(void) {
  int v = 0, a3 = 0;
#pragma omp target map(from: v, a3)
  { v = g; a3 = arr[3]; }
  printf("device=%d arr[3]=%d\n", v, a3);
  return !(v == 123 && a3 == 4);
}
