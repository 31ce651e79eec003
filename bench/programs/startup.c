// Start-up: a whole program with one empty target region (the runner times the process and
// reads its peak memory).
int main(void) {
  int x = 0;
#pragma omp target map(tofrom: x)
  x = 1;
  return x != 1;
}
