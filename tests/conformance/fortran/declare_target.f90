! RULE: declare target module variables and functions exist on the device, per device
! EXPECT: declare_target: OK
module dt_mod
  implicit none
  integer :: counter = 0
  real(8) :: table(16)
  !$omp declare target(counter, table)
contains
  function scaled(x) result(y)
    !$omp declare target
    real(8), intent(in) :: x
    real(8) :: y
    y = 3.0d0 * x + table(1)
  end function
end module

program declare_target
  use dt_mod
  implicit none
  real(8) :: out(16)
  integer :: i, c0, c1
  table = 0.5d0
  !$omp target update to(table) device(0)
  table = 7.0d0
  !$omp target update to(table) device(1)
  !$omp target map(from: out) device(0)
  do i = 1, 16
    out(i) = scaled(dble(i))
  end do
  counter = counter + 1
  !$omp end target
  do i = 1, 16
    if (out(i) /= 3.0d0 * i + 0.5d0) then
      print *, 'declare_target: out(', i, ') =', out(i)
      stop 1
    end if
  end do
  !$omp target map(from: out) device(1)
  do i = 1, 16
    out(i) = scaled(dble(i))
  end do
  counter = counter + 10
  !$omp end target
  if (out(2) /= 13.0d0) then
    print *, 'declare_target: device 1 out(2) =', out(2)
    stop 1
  end if
  !$omp target update from(counter) device(0)
  c0 = counter
  !$omp target update from(counter) device(1)
  c1 = counter
  if (c0 /= 1 .or. c1 /= 10) then
    print *, 'declare_target: counters', c0, c1
    stop 1
  end if
  print '(a)', 'declare_target: OK'
end program
