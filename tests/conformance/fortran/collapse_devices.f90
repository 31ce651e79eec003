! RULE: target teams distribute parallel do with collapse(2) runs on every host device (device(n))
! EXPECT: collapse_devices: OK
program collapse_devices
  use omp_lib
  implicit none
  integer, parameter :: n = 37, m = 53
  integer :: a(n, m), i, j, d, ndev, bad
  ndev = omp_get_num_devices()
  if (ndev < 1) then
    print *, 'collapse_devices: no devices'
    stop 1
  end if
  bad = 0
  do d = 0, ndev - 1
    a = -1
    !$omp target teams distribute parallel do collapse(2) device(d) map(tofrom: a)
    do j = 1, m
      do i = 1, n
        a(i, j) = 1000 * d + 100 * j + i
      end do
    end do
    do j = 1, m
      do i = 1, n
        if (a(i, j) /= 1000 * d + 100 * j + i) bad = bad + 1
      end do
    end do
    print '(a,i0,a,i0)', 'collapse_devices: device ', d, ' wrong elements ', bad
  end do
  if (bad /= 0) stop 1
  print '(a)', 'collapse_devices: OK'
end program
