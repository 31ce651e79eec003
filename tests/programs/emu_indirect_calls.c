// `declare target indirect` functions called through host function pointers in a kernel. On a
// GPU the device runtime translates each pointer through the indirect-call table the plugin
// writes when it loads the image; the emulator runs the x86-64 twin, which calls the pointers
// as they are, so the test reads the table the plugin wrote from the driver trace. The host
// addresses are printed for that check.
#include <stdio.h>

int twice(int x) { return 2 * x; }
int thrice(int x) { return 3 * x; }
#pragma omp declare target to(twice, thrice) indirect

typedef int (*operation)(int);

int main(void) {
  operation ops[2] = {thrice, twice};
  int out[2] = {0, 0};
#pragma omp target map(to : ops) map(from : out)
  for (int i = 0; i < 2; i++)
    out[i] = ops[i](10 + i);
  printf("host twice=%p thrice=%p\n", (void *)twice, (void *)thrice);
  printf("results %d %d\n", out[0], out[1]);
  return !(out[0] == 30 && out[1] == 22);
}
