! A target region as flang-19 compiles it (a smaller subset of OpenMP than flang-22: no
! device clause on target, no composite distribute parallel do), run on a host device
! through omptarget-rs's host device runtime: a parallel region of four real threads, a
! worksharing loop, the device-side omp_lib queries.
program flang19_target
  use omp_lib
  implicit none
  integer :: a(1000), i, nthreads, device, distinct, seen(0:63)
  logical :: initial
  nthreads = 0
  seen = 0
  !$omp target map(from: a, nthreads, device, initial) map(tofrom: seen)
  device = omp_get_device_num()
  initial = omp_is_initial_device()
  !$omp parallel num_threads(4)
  !$omp atomic update
  seen(omp_get_thread_num()) = seen(omp_get_thread_num()) + 1
  if (omp_get_thread_num() == 0) nthreads = omp_get_num_threads()
  !$omp end parallel
  !$omp parallel do
  do i = 1, 1000
    a(i) = i * 2
  end do
  !$omp end target
  distinct = count(seen > 0)
  print '(a,i0,a,i0,a,i0,a,l1)', 'flang-19: a(1000)=', a(1000), ' threads=', nthreads, &
    ' distinct=', distinct, ' initial=', initial
  if (a(1000) /= 2000 .or. nthreads /= 4 .or. distinct /= 4 .or. initial) stop 1
  if (device /= omp_get_default_device()) stop 2
end program
