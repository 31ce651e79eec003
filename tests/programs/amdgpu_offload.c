// An AMDGPU offload program for the AMDGPU plugin's tests (built for gfx targets here, where
// there is no AMD GPU): a declare-target global with an initial value, a plain target region
// and a combined construct with a reduction (whose kernel needs a launch environment).
#include <stdio.h>

int scale = 5;
#pragma omp declare target(scale)

int main(void) {
    int x = 1;
    double a[100], sum = 0;
    for (int i = 0; i < 100; i++)
        a[i] = i;
#pragma omp target map(tofrom : x)
    { x += scale; }
#pragma omp target teams distribute parallel for reduction(+ : sum) map(to : a)
    for (int i = 0; i < 100; i++)
        sum += a[i];
    printf("x=%d sum=%.0f\n", x, sum);
    return !(x == 6 && sum == 4950);
}
