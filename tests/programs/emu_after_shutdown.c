// Device work asked for after the runtime shut its plugins down at exit: an exit handler
// registered before the runtime started (from a constructor that runs before the offloading
// registration) runs after the runtime's own, when the driver is already shut down. The
// runtime must refuse it with a reason, not call into the shut-down driver.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

static void after_the_runtime(void) {
  void *p = omp_target_alloc(64, 0);
  printf("after shutdown: %s\n", p ? "allocated" : "refused");
  fflush(stdout);
}

__attribute__((constructor(100))) static void before_the_runtime(void) {
  atexit(after_the_runtime);
}

int main(void) {
  int x = 1;
#pragma omp target map(tofrom : x)
  x += 1;
  printf("x=%d\n", x);
  return x != 2;
}
