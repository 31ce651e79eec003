! RULE: nested maps copy only at the outermost reference; always copies every time
! EXPECT: refcount_always: OK
program refcount_always
  implicit none
  integer :: x
  x = 1
  !$omp target enter data map(to: x)
  x = 2
  ! Already present: not copied again, the device keeps 1.
  !$omp target map(tofrom: x)
    x = x + 10
  !$omp end target
  ! The inner map's from was not done either (reference count above one): host still 2.
  if (x /= 2) then
    print *, 'refcount_always: after the nested map x =', x
    stop 1
  end if
  !$omp target map(always, tofrom: x)
    x = x + 100
  !$omp end target
  ! always copies in (2) and out (102).
  if (x /= 102) then
    print *, 'refcount_always: after always x =', x
    stop 1
  end if
  !$omp target exit data map(from: x)
  if (x /= 102) then
    print *, 'refcount_always: at exit x =', x
    stop 1
  end if
  print '(a)', 'refcount_always: OK'
end program
