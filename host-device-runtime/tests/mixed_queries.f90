! A Fortran target region, whose kernel pulls the host device runtime into the image that
! mixed_queries.c's clang-compiled kernel shares (see there).
subroutine fortran_kernel(x) bind(C, name="fortran_kernel")
  use iso_c_binding
  implicit none
  integer(c_int) :: x
  !$omp target map(tofrom: x)
    x = x + 1
  !$omp end target
end subroutine
