! RULE: + and max reductions combine across teams and threads
! EXPECT: reductions: OK
program reductions
  implicit none
  integer, parameter :: n = 100000
  integer(8) :: s
  integer :: mx, i, rep
  real(8) :: r
  s = 0
  !$omp target teams distribute parallel do num_teams(4) thread_limit(4) reduction(+: s)
  do i = 1, n
    s = s + i
  end do
  if (s /= int(n, 8) * (n + 1) / 2) then
    print *, 'reductions: sum', s
    stop 1
  end if
  ! Teams of more than four threads (libomp's tree method), many times: every team combines
  ! into the same s, at the same time.
  do rep = 1, 20
    s = 0
    !$omp target teams distribute parallel do num_teams(8) thread_limit(8) num_threads(8) &
    !$omp& reduction(+: s)
    do i = 1, n
      s = s + i
    end do
    if (s /= int(n, 8) * (n + 1) / 2) then
      print *, 'reductions: sum of eight teams of eight threads', s, 'round', rep
      stop 1
    end if
  end do
  mx = -1
  !$omp target teams distribute parallel do num_teams(3) reduction(max: mx)
  do i = 1, n
    mx = max(mx, mod(i * 7919, 100003))
  end do
  if (mx /= maxval([(mod(i * 7919, 100003), i = 1, n)])) then
    print *, 'reductions: max', mx
    stop 1
  end if
  r = 0
  !$omp target teams distribute num_teams(5) reduction(+: r)
  do i = 1, 1000
    r = r + 0.5d0
  end do
  if (r /= 500.0d0) then
    print *, 'reductions: teams-only sum', r
    stop 1
  end if
  ! Many one-thread teams combining at once (libomp would combine a team of one without a lock).
  do rep = 1, 100
    s = 0
    !$omp target teams distribute num_teams(64) reduction(+: s)
    do i = 1, 64
      s = s + i
    end do
    if (s /= 64 * 65 / 2) then
      print *, 'reductions: sum of 64 teams', s, 'round', rep
      stop 1
    end if
  end do
  s = 0
  !$omp target parallel do num_threads(4) reduction(+: s)
  do i = 1, n
    s = s + 2
  end do
  if (s /= 2 * n) then
    print *, 'reductions: parallel-only sum', s
    stop 1
  end if
  print '(a)', 'reductions: OK'
end program
