// A program that offloads, forks a child that exits at once (running the exit handlers it
// inherited), then offloads again: the child must not shut down the plugins, which are its
// parent's (the parent's driver state, or its MPI device processes).
#include <stdio.h>
#include <stdlib.h>
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
  fflush(stdout);
  pid_t child = fork();
  if (child == 0)
    exit(0);
  int status = 0;
  waitpid(child, &status, 0);
  int after = region(20);
  printf("before=%d after=%d child=%d\n", before, after, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return !(before == 2 && after == 21);
}
