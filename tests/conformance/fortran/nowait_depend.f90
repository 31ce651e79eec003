! RULE: target nowait regions run in the order their depend clauses give, taskwait waits for them
! EXPECT: nowait_depend: OK
program nowait_depend
  implicit none
  integer, parameter :: n = 2000
  integer :: a(n), b(n), i
  a = 0
  b = 0
  !$omp target enter data map(to: a, b)
  !$omp parallel
  !$omp single
    !$omp target teams distribute parallel do nowait depend(out: a)
    do i = 1, n
      a(i) = i
    end do
    !$omp target teams distribute parallel do nowait depend(in: a) depend(out: b)
    do i = 1, n
      b(i) = 2 * a(i)
    end do
    ! flang 22 cannot lower depend on target update: the update waits for the tasks instead.
    !$omp taskwait
    !$omp target update from(a, b)
  !$omp end single
  !$omp end parallel
  !$omp target exit data map(delete: a, b)
  do i = 1, n
    if (a(i) /= i .or. b(i) /= 2 * i) then
      print *, 'nowait_depend:', i, a(i), b(i)
      stop 1
    end if
  end do
  print '(a)', 'nowait_depend: OK'
end program
