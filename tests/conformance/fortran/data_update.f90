! RULE: target data keeps arrays on the device; target update moves values both ways
! EXPECT: data_update: OK
program data_update
  implicit none
  integer, parameter :: n = 1000
  real(8) :: x(n), y(n)
  integer :: i
  x = 1.0d0
  y = 0.0d0
  !$omp target data map(to: x) map(from: y) device(1)
    !$omp target teams distribute parallel do device(1)
    do i = 1, n
      y(i) = 2.0d0 * x(i)
    end do
    ! The host copy of x changes; the device keeps the old one until updated.
    x = 5.0d0
    !$omp target teams distribute parallel do device(1)
    do i = 1, n
      y(i) = y(i) + x(i)
    end do
    !$omp target update from(y) device(1)
    if (any(y /= 3.0d0)) then
      print *, 'data_update: before update, y(1) =', y(1)
      stop 1
    end if
    !$omp target update to(x) device(1)
    !$omp target teams distribute parallel do device(1)
    do i = 1, n
      y(i) = y(i) + x(i)
    end do
  !$omp end target data
  if (any(y /= 8.0d0)) then
    print *, 'data_update: after the region, y(1) =', y(1)
    stop 1
  end if
  print '(a)', 'data_update: OK'
end program
