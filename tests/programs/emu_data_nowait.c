// `nowait` data constructs, each in its own task: arrays entered, updated and exited with
// `nowait`, a `taskwait` after each batch. On an emulated driver with a delay per queued
// operation each construct's copy is still running when its task ends; the test reads from
// the runtime's debug output that the constructs were left to their tasks' queries, and the
// program checks every value that came back.
#include <stdio.h>

#define ARRAYS 4
#define N 4096

static int data[ARRAYS][N];

int main(void) {
  for (int a = 0; a < ARRAYS; a++)
    for (int i = 0; i < N; i++)
      data[a][i] = a * N + i;
  for (int a = 0; a < ARRAYS; a++) {
#pragma omp target enter data nowait map(to : data[a][0:N])
  }
#pragma omp taskwait
  for (int a = 0; a < ARRAYS; a++) {
#pragma omp target map(present, alloc : data[a][0:N])
    for (int i = 0; i < N; i++)
      data[a][i] *= 2;
  }
  for (int a = 0; a < ARRAYS; a++) {
#pragma omp target update nowait from(data[a][0:N / 2])
  }
#pragma omp taskwait
  int ok = 1;
  for (int a = 0; a < ARRAYS; a++)
    for (int i = 0; i < N / 2; i++)
      ok &= data[a][i] == 2 * (a * N + i);
  for (int a = 0; a < ARRAYS; a++) {
#pragma omp target exit data nowait map(from : data[a][0:N])
  }
#pragma omp taskwait
  for (int a = 0; a < ARRAYS; a++)
    for (int i = 0; i < N; i++)
      ok &= data[a][i] == 2 * (a * N + i);
  printf("arrays=%d %s\n", ARRAYS, ok ? "ok" : "WRONG");
  return !ok;
}
