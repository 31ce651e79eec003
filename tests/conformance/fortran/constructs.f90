! RULE: worksharing, tasks, single, masked, simd, loop, 64-bit and chunked loops, Fortran runtime calls in kernels
! EXPECT: constructs: OK
program constructs
  use omp_lib
  implicit none
  integer, parameter :: n = 1000
  integer :: a(n), i, j, k, s, singles, maskeds, tasks, ar(4)
  integer(8) :: i8, s8
  real(8) :: x
  real(8), allocatable :: t(:)
  a = 0
  !$omp target teams distribute parallel do simd map(tofrom: a)
  do i = 1, n
    a(i) = i
  end do
  !$omp target teams loop map(tofrom: a)
  do i = 1, n
    a(i) = a(i) + 1
  end do
  s = 0; singles = 0; maskeds = 0; tasks = 0
  !$omp target parallel num_threads(4) map(tofrom: a, s, singles, maskeds, tasks)
    !$omp do schedule(dynamic, 7)
    do i = 1, n
      a(i) = a(i) + 1
    end do
    !$omp end do
    !$omp do schedule(static, 4) reduction(+: s)
    do i = 1, n
      s = s + a(i)
    end do
    !$omp end do
    !$omp single
    singles = singles + 1
    !$omp end single
    !$omp masked
    maskeds = maskeds + 1
    !$omp end masked
    !$omp task shared(tasks)
    !$omp atomic
    tasks = tasks + 1
    !$omp end task
    !$omp taskwait
  !$omp end target parallel
  ! a(i) = i + 2 here
  if (s /= n * (n + 1) / 2 + 2 * n .or. singles /= 1 .or. maskeds /= 1 .or. tasks /= 4) then
    print *, 'constructs: target parallel', s, singles, maskeds, tasks
    stop 1
  end if
  !$omp target teams distribute parallel do num_teams(3) map(tofrom: a) dist_schedule(static, 8) &
  !$omp& schedule(static, 2)
  do i8 = 1_8, int(n, 8)
    a(i8) = a(i8) + 1
  end do
  do i = 1, n
    if (a(i) /= i + 3) then
      print *, 'constructs: a(', i, ') =', a(i)
      stop 1
    end if
  end do
  s8 = 0
  !$omp target teams distribute num_teams(4) reduction(+: s8)
  do i8 = 1_8, 100000_8
    s8 = s8 + i8
  end do
  if (s8 /= 100000_8 * 100001_8 / 2) then
    print *, 'constructs: 64-bit distribute sum', s8
    stop 1
  end if
  ar = 0
  !$omp target teams distribute parallel do collapse(3) reduction(+: ar)
  do i = 1, 4
    do j = 1, 4
      do k = 1, 4
        ar(i) = ar(i) + j * k
      end do
    end do
  end do
  if (any(ar /= 100)) then
    print *, 'constructs: array reduction', ar
    stop 1
  end if
  !$omp target map(from: x)
    allocate(t(10))
    t = 1.5d0
    x = sum(t)
    deallocate(t)
    print '(a,f6.2)', 'constructs: in a target region, sum =', x
  !$omp end target
  if (x /= 15.0d0) then
    print *, 'constructs: sum', x
    stop 1
  end if
  !$omp target simd map(tofrom: a)
  do i = 1, n
    a(i) = a(i) - 3
  end do
  if (any(a /= [(i, i = 1, n)])) then
    print *, 'constructs: target simd'
    stop 1
  end if
  print '(a)', 'constructs: OK'
end program
