! The host device runtime under either host plugin (tests/tests/llvm_suite.rs): ours launches a
! kernel through the image's launcher, on a league of real teams whose parallel regions fork
! threads; LLVM 22's calls the kernel itself, once, and the kernel then runs as one team of one
! thread. Either way the queries agree with the shape, and loops and reductions are whole.
program one_team
  use omp_lib
  implicit none
  integer :: teams, threads, limit, max_threads, devices, total, i
  integer :: a(1000)
  teams = -1
  threads = -1
  !$omp target teams num_teams(3) map(tofrom: teams, threads, limit, max_threads, devices)
    if (omp_get_team_num() == 0) then
      teams = omp_get_num_teams()
      limit = omp_get_thread_limit()
      max_threads = omp_get_max_threads()
      devices = omp_get_num_devices()
      !$omp parallel num_threads(2)
        if (omp_get_thread_num() == 0) threads = omp_get_num_threads()
      !$omp end parallel
    end if
  !$omp end target teams
  total = 0
  !$omp target teams distribute parallel do reduction(+: total) map(tofrom: total, a)
  do i = 1, 1000
    a(i) = i
    total = total + i
  end do
  print '(a,i0,a,i0,a,i0,a,i0,a,i0)', 'teams ', teams, ' threads ', threads, ' limit ', limit, &
    ' max_threads ', max_threads, ' devices ', devices
  print '(a,i0,a,i0)', 'sum ', total, ' last ', a(1000)
end program
