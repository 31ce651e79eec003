// A program that offloads, forks, and offloads again in both processes: with
// LIBOMPTARGET_PROFILE each process writes a valid trace of its own.
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static int region(int v) {
  int x = v;
#pragma omp target map(tofrom : x)
  x += 1;
  return x;
}

int main(void) {
  int before = region(1);
  pid_t child = fork();
  if (child == 0) {
    int r = region(10);
    printf("child %d %s\n", (int)getpid(), r == 11 ? "ok" : "WRONG");
    return r != 11;
  }
  int status = 0;
  waitpid(child, &status, 0);
  int after = region(20);
  int ok = before == 2 && after == 21 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  printf("parent %s\n", ok ? "ok" : "WRONG");
  return !ok;
}
