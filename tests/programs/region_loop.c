// N empty target regions with one scalar map(tofrom:) and one firstprivate, after a warm-up:
// the valgrind test counts heap allocations for two values of N, which must be equal (the
// per-construct path allocates nothing).
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 10;
    int x = 0, step = 1;
    for (int i = 0; i < 100; i++) {
#pragma omp target map(tofrom : x) firstprivate(step)
        x += step;
    }
    for (long i = 0; i < n; i++) {
#pragma omp target map(tofrom : x) firstprivate(step)
        x += step;
    }
    printf("x=%d\n", x);
    return x != 100 + n;
}
