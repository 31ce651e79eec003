// A program whose device image the damaged_images test damages: whatever happens to the image,
// the run must end with this output (on a device or on the host) or a clear error.
#include <stdio.h>

int table[256];
#pragma omp declare target(table)

int main(void) {
  long sum = 0;
  for (int i = 0; i < 256; i++)
    table[i] = i;
#pragma omp target update to(table)
#pragma omp target map(tofrom : sum)
  for (int i = 0; i < 256; i++)
    sum += table[i] * 2;
  printf("sum=%ld\n", sum);
  return sum != 65280;
}
