! RULE: allocatable arrays live on the device between target enter data and target exit data
! EXPECT: enter_exit_alloc: OK
program enter_exit_alloc
  implicit none
  real(8), allocatable :: a(:), b(:)
  integer :: n, i
  n = 4096
  allocate(a(n), b(n))
  do i = 1, n
    a(i) = i
  end do
  b = 0
  !$omp target enter data map(to: a) map(alloc: b)
  !$omp target teams distribute parallel do
  do i = 1, n
    b(i) = a(i) * a(i)
  end do
  a = -1
  !$omp target teams distribute parallel do
  do i = 1, n
    b(i) = b(i) + a(i)
  end do
  !$omp target exit data map(from: b) map(delete: a)
  do i = 1, n
    if (b(i) /= dble(i) * dble(i) + dble(i)) then
      print *, 'enter_exit_alloc: b(', i, ') =', b(i)
      stop 1
    end if
  end do
  deallocate(a, b)
  print '(a)', 'enter_exit_alloc: OK'
end program
