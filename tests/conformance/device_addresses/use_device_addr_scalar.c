// RULE: inside target data use_device_addr(x) references to the scalar x refer to its device copy
// EXPECT: host_x=1 device_x=5 differ=yes
#include <omp.h>
#include <stdio.h>

int main(void) {
  int x = 1, dv = 0;
  int *hx = &x, *dx = NULL;
#pragma omp target data map(to: x)
  {
#pragma omp target data use_device_addr(x)
    {
      dx = &x;
    }
#pragma omp target is_device_ptr(dx) map(from: dv)
    { *dx = 5; dv = *dx; }
    // the device copy changed, not the host variable
  }
  printf("host_x=%d device_x=%d differ=%s\n", x, dv, dx != hx ? "yes" : "no");
  return !(x == 1 && dv == 5 && dx != hx);
}
