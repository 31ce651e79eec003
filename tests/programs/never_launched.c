// The image is registered but no region ever runs: no device is initialised.
// EXPECT: never launched ok
#include <stdio.h>
int unused(int x) {
#pragma omp target map(tofrom : x)
  x += 1;
  return x;
}
int main(int argc, char **argv) {
  (void)argv;
  if (argc > 5) return unused(argc);
  printf("never launched ok\n");
  return 0;
}
