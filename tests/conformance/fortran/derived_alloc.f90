! RULE: a derived type's allocatable component is mapped with its descriptor and data
! EXPECT: derived_alloc: OK
program derived_alloc
  implicit none
  type field
    integer :: n
    real(8), allocatable :: v(:)
  end type
  type(field) :: f
  integer :: i
  f%n = 500
  allocate(f%v(f%n))
  f%v = 1.0d0
  !$omp target map(tofrom: f, f%v)
  do i = 1, f%n
    f%v(i) = f%v(i) + i
  end do
  !$omp end target
  do i = 1, f%n
    if (f%v(i) /= 1.0d0 + i) then
      print *, 'derived_alloc: v(', i, ') =', f%v(i)
      stop 1
    end if
  end do
  print '(a)', 'derived_alloc: OK'
end program
