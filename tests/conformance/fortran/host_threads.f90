! RULE: target regions launched at once from several host threads, on one device and on several, each run whole
! EXPECT: host_threads: OK
program host_threads
  use omp_lib
  implicit none
  integer, parameter :: n = 5000, nt = 4
  integer :: a(n, nt), t, i, r, bad
  a = 0
  !$omp parallel num_threads(nt) private(t, i, r)
    t = omp_get_thread_num() + 1
    do r = 1, 20
      !$omp target teams distribute parallel do num_teams(2) device(mod(t, 2)) map(tofrom: a(:, t))
      do i = 1, n
        a(i, t) = a(i, t) + t
      end do
    end do
  !$omp end parallel
  bad = 0
  do t = 1, nt
    do i = 1, n
      if (a(i, t) /= 20 * t) bad = bad + 1
    end do
  end do
  if (bad /= 0) then
    print *, 'host_threads: wrong elements', bad
    stop 1
  end if
  print '(a)', 'host_threads: OK'
end program
