! y = a*x + y on an offload device, checked on the host: saxpy.c in Fortran.
program saxpy
  use omp_lib
  implicit none
  integer, parameter :: n = 1048576
  real, parameter :: a = 2.0
  real, allocatable :: x(:), y(:)
  integer :: i, errors
  logical :: on_host
  allocate(x(n), y(n))
  do i = 1, n
    x(i) = real(i - 1)
    y(i) = 1.0
  end do
  on_host = .true.
  !$omp target teams distribute parallel do map(to: x) map(tofrom: y, on_host)
  do i = 1, n
    if (i == 1) on_host = omp_is_initial_device()
    y(i) = a * x(i) + y(i)
  end do
  errors = 0
  do i = 1, n
    if (y(i) /= a * real(i - 1) + 1.0) errors = errors + 1
  end do
  if (on_host) then
    write (*, '(a)', advance='no') 'saxpy on the host'
  else
    write (*, '(a)', advance='no') 'saxpy on an offload device'
  end if
  write (*, '(a,i0,a,i0,a)', advance='no') ' (device ', omp_get_default_device(), ' of ', &
    omp_get_num_devices(), '): '
  if (errors == 0) then
    print '(a)', 'correct'
  else
    print '(a)', 'WRONG'
  end if
  if (errors /= 0) stop 1
end program saxpy
