// Struct members and pointer attachment: the device copy of s.data points at the device copy
// of the array, and the host pointer is intact after the struct is copied back.
// EXPECT: structs ok
#include <stdio.h>
#include <stdlib.h>
struct Buffer {
  int n;
  int *data;
  double weight;
};
int main(void) {
  struct Buffer s;
  s.n = 100;
  s.weight = 0.5;
  s.data = malloc(100 * sizeof(int));
  int *original = s.data;
  for (int i = 0; i < 100; i++) s.data[i] = i;
#pragma omp target map(tofrom : s, s.data[0:100])
  {
    for (int i = 0; i < s.n; i++) s.data[i] *= 2;
    s.weight = 1.5;
  }
  int ok = s.data == original && s.weight == 1.5 && s.data[99] == 198;
  // The same through target data + update of the whole struct.
#pragma omp target data map(to : s, s.data[0:100])
  {
#pragma omp target
    s.data[1] = 77;
#pragma omp target update from(s)
    ok = ok && s.data == original;
#pragma omp target update from(s.data[0:100])
  }
  ok = ok && s.data[1] == 77;
  printf(ok ? "structs ok\n" : "FAIL data %p/%p weight %f d99 %d d1 %d\n", (void *)s.data, (void *)original,
         s.weight, s.data[99], s.data[1]);
  return !ok;
}
