// RULE: a firstprivate array larger than 1 KiB is copied to the device in full and not copied back
// EXPECT: sum=2098176 first=1 last=2048 host_last=2048
#include <stdio.h>

int main(void) {
  int a[2048]; /* 8 KiB */
  long sum = 0;
  int first = 0, last = 0;
  for (int i = 0; i < 2048; i++) a[i] = i + 1;
#pragma omp target firstprivate(a) map(from: sum, first, last)
  {
    long s = 0;
    for (int i = 0; i < 2048; i++) s += a[i];
    sum = s;
    first = a[0];
    last = a[2047];
    for (int i = 0; i < 2048; i++) a[i] = 0;
  }
  printf("sum=%ld first=%d last=%d host_last=%d\n", sum, first, last, a[2047]);
  return !(sum == 2098176 && first == 1 && last == 2048 && a[2047] == 2048);
}
