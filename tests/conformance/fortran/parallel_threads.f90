! RULE: a parallel region inside a target region runs on several threads
! EXPECT: parallel_threads: OK
program parallel_threads
  use omp_lib
  implicit none
  integer :: seen(0:63), nthreads, i, distinct
  seen = 0
  nthreads = 0
  !$omp target map(tofrom: seen, nthreads) device(1)
    !$omp parallel num_threads(4)
      !$omp atomic update
      seen(omp_get_thread_num()) = seen(omp_get_thread_num()) + 1
      if (omp_get_thread_num() == 0) nthreads = omp_get_num_threads()
    !$omp end parallel
  !$omp end target
  distinct = count(seen > 0)
  print '(a,i0,a,i0)', 'parallel_threads: ', distinct, ' distinct threads, team of ', nthreads
  if (distinct /= 4 .or. nthreads /= 4) stop 1
  ! The threads really run at the same time: each waits until all have arrived.
  i = 0
  !$omp target map(tofrom: i) device(1)
    !$omp parallel num_threads(4) shared(i)
      !$omp atomic update
      i = i + 1
      !$omp barrier
      if (i /= 4) then
        !$omp atomic update
        i = i + 1000
      end if
    !$omp end parallel
  !$omp end target
  if (i /= 4) then
    print *, 'parallel_threads: barrier count', i
    stop 1
  end if
  print '(a)', 'parallel_threads: OK'
end program
