// RULE: map(always, to:) sends the host value again even though the data is already mapped
// EXPECT: plain=1 always=2
#include <stdio.h>

int main(void) {
  int x = 1, plain = 0, always = 0;
#pragma omp target data map(to: x)
  {
    x = 2;
#pragma omp target map(to: x) map(from: plain)
    plain = x;
#pragma omp target map(always, to: x) map(from: always)
    always = x;
  }
  printf("plain=%d always=%d\n", plain, always);
  return !(plain == 1 && always == 2);
}
