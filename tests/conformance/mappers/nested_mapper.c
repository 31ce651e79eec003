// RULE: a mapper for an outer struct that maps an inner struct member applies the inner struct's own mapper to it
// EXPECT: inner[0]=100 inner[5]=105 outer=7 device_copy=yes
#include <stdint.h>
#include <stdio.h>

typedef struct { int n; int *v; } Inner;
typedef struct { int tag; Inner in; } Outer;
#pragma omp declare mapper(Inner i) map(i, i.v[0:i.n])
#pragma omp declare mapper(Outer o) map(o.tag, o.in)

int main(void) {
  int vals[6];
  for (int i = 0; i < 6; i++) vals[i] = i;
  Outer o = {6, {6, vals}};
  uintptr_t host = (uintptr_t)vals;
  int moved = 0;
#pragma omp target map(tofrom: o) map(from: moved)
  {
    moved = (uintptr_t)o.in.v != host;
    for (int i = 0; i < o.in.n; i++) o.in.v[i] += 100;
    o.tag += 1;
  }
  printf("inner[0]=%d inner[5]=%d outer=%d device_copy=%s\n", vals[0], vals[5], o.tag, moved ? "yes" : "no");
  for (int i = 0; i < 6; i++) if (vals[i] != 100 + i) return 1;
  return !(o.tag == 7 && moved);
}
