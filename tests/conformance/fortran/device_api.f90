! RULE: omp_lib's device routines answer for the device and the league inside kernels
! EXPECT: device_api: OK
program device_api
  use omp_lib
  implicit none
  integer :: d, ndev, dev, nd, init, nteams, t, seen(8), nthr, tid_max, tn(64), tl, lv
  ndev = omp_get_num_devices()
  do d = 0, ndev - 1
    seen = 0
    !$omp target teams num_teams(3) device(d) map(from: dev, nd, init, nteams) map(tofrom: seen)
      t = omp_get_team_num()
      seen(t + 1) = 1
      if (t == 0) then
        dev = omp_get_device_num()
        nd = omp_get_num_devices()
        init = merge(1, 0, omp_is_initial_device())
        nteams = omp_get_num_teams()
      end if
    !$omp end target teams
    if (dev /= d .or. nd /= ndev .or. init /= 0 .or. nteams /= 3 .or. sum(seen) /= 3) then
      print '(a,7(1x,i0))', 'device_api: device', d, dev, nd, init, nteams, sum(seen)
      stop 1
    end if
  end do
  !$omp target parallel num_threads(3) map(from: nthr, tid_max) device(1)
    if (omp_get_thread_num() == 0) nthr = omp_get_num_threads()
    !$omp critical
    tid_max = max(tid_max, omp_get_thread_num())
    !$omp end critical
  !$omp end target parallel
  if (nthr /= 3) then
    print *, 'device_api: threads', nthr, tid_max
    stop 1
  end if
  ! Inside each team's parallel region: the team's number, the thread limit asked for, as many
  ! threads by default, one level of parallelism.
  tn = -1
  !$omp target teams num_teams(4) thread_limit(3) map(tofrom: tn, tl, nthr, lv) device(2)
    !$omp parallel
      tn(omp_get_team_num() * 16 + omp_get_thread_num() + 1) = omp_get_team_num()
      if (omp_get_team_num() == 0 .and. omp_get_thread_num() == 0) then
        tl = omp_get_thread_limit()
        nthr = omp_get_num_threads()
        lv = omp_get_level()
      end if
    !$omp end parallel
  !$omp end target teams
  if (tl /= 3 .or. nthr /= 3 .or. lv /= 1 .or. count(tn >= 0) /= 12) then
    print *, 'device_api: teams of threads', tl, nthr, lv, count(tn >= 0)
    stop 1
  end if
  do t = 0, 3
    if (any(tn(t * 16 + 1:t * 16 + 3) /= t)) then
      print *, 'device_api: team', t, 'saw', tn(t * 16 + 1:t * 16 + 3)
      stop 1
    end if
  end do
  if (omp_get_device_num() /= omp_get_initial_device() .or. .not. omp_is_initial_device()) then
    print *, 'device_api: host answers', omp_get_device_num(), omp_get_initial_device()
    stop 1
  end if
  print '(a)', 'device_api: OK'
end program
