// RULE: map(always, from:) copies the device value back at the end of the region even though an enclosing region holds the data
// EXPECT: plain=0 always=20
#include <stdio.h>

int main(void) {
  int x = 0, plain, always;
#pragma omp target data map(tofrom: x)
  {
#pragma omp target map(from: x)
    x = 10;
    plain = x;
#pragma omp target map(always, from: x)
    x = 20;
    always = x;
  }
  printf("plain=%d always=%d\n", plain, always);
  return !(plain == 0 && always == 20);
}
