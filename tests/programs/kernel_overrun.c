// Writes one element past a mapped array of 10 ints inside a kernel, as three Fortran tests of
// LLVM 22's suite do. LLVM's host plugin gives each mapping its own malloc, so valgrind
// reports the write; the runtime's pool of small mappings must not hide it (memory_pool.rs
// tells memcheck about its blocks). With an argument "ok" the kernel stays in bounds, and the
// run must be clean.
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    int overrun = !(argc > 1 && strcmp(argv[1], "ok") == 0);
    int a[11] = {0};
    int n = 10 + overrun; // elements the kernel writes: one too many unless "ok"
#pragma omp target map(tofrom : a[0 : 10]) firstprivate(n)
    for (int i = 0; i < n; i++)
        a[i] = i + 1;
    int sum = 0;
    for (int i = 0; i < 10; i++)
        sum += a[i];
    printf("sum=%d\n", sum);
    return sum != 55;
}
