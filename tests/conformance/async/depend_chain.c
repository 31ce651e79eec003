// RULE: depend(out)/depend(in) order target nowait regions and host tasks into a chain: each step sees the previous step's result
// EXPECT: x=((1+1)*3+10)*2=32 host_saw=6
#include <stdio.h>
#include <unistd.h>

int main(void) {
  int x = 1, host_saw = 0;
#pragma omp parallel num_threads(2)
#pragma omp single
  {
#pragma omp target map(tofrom: x) depend(out: x) nowait
    { x += 1; }
#pragma omp target map(tofrom: x) depend(inout: x) nowait
    { x *= 3; }
#pragma omp task depend(inout: x) shared(x, host_saw)
    { host_saw = x; usleep(10000); x += 10; }
#pragma omp target map(tofrom: x) depend(in: x) nowait
    { x *= 2; }
#pragma omp taskwait
  }
  printf("x=((1+1)*3+10)*2=%d host_saw=%d\n", x, host_saw);
  return !(x == 32 && host_saw == 6);
}
