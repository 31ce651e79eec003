// RULE: clang-22's attach(auto): map(p[0:n]) attaches p only when the construct newly maps p or the pointee; a pointer already attached, or re-pointed at data mapped earlier, keeps its device value (LIBOMPTARGET_TREAT_ATTACH_AUTO_AS_ALWAYS=1 attaches every time)
// EXPECT: both mapped before, pointer null when mapped: null
// EXPECT: pointee new: z
// EXPECT: both mapped before, re-pointed: z
// EXPECT: pointer new: y
// COMPILERS: clang22
#include <omp.h>
#include <stdio.h>

int x[4] = {1, 2, 3, 4}, y[4] = {10, 20, 30, 40}, z[4] = {5, 6, 7, 8};
int *p;

/* Which array the device copy of p holds the device address of (null: none). */
static const char *target_of_p(int dev) {
  int *held = NULL;
#pragma omp target map(present, alloc: p) map(from: held)
  { held = p; }
  if (!held) return "null";
  if (held == omp_get_mapped_ptr(x, dev)) return "x";
  if (held == omp_get_mapped_ptr(y, dev)) return "y";
  if (held == omp_get_mapped_ptr(z, dev)) return "z";
  return "neither";
}

int main(void) {
  int dev = omp_get_default_device();
  const char *seen[4];
  /* 1: p (still null) and x mapped by earlier constructs; this one maps neither. */
#pragma omp target enter data map(to: p)
#pragma omp target enter data map(to: x, y)
  p = x;
#pragma omp target enter data map(to: p[0:4])
  seen[0] = target_of_p(dev);
  /* 2: the construct maps the pointee, z, for the first time. */
  p = z;
#pragma omp target enter data map(to: p[0:4])
  seen[1] = target_of_p(dev);
  /* 3: p re-pointed at y, mapped before, as p is. */
  p = y;
#pragma omp target enter data map(to: p[0:4])
  seen[2] = target_of_p(dev);
  /* 4: p mapped anew (its device copy holds the host address of y) with its pointee. */
#pragma omp target exit data map(delete: p)
#pragma omp target enter data map(to: p, p[0:4])
  seen[3] = target_of_p(dev);

  printf("both mapped before, pointer null when mapped: %s\n", seen[0]);
  printf("pointee new: %s\n", seen[1]);
  printf("both mapped before, re-pointed: %s\n", seen[2]);
  printf("pointer new: %s\n", seen[3]);
#pragma omp target exit data map(delete: p, x, y, z)
  return 0;
}
