#pragma omp declare target
int shared_offset = 5;
#pragma omp end declare target
int scale_on_device(int *v, int n, int factor) {
  int total = 0;
#pragma omp target teams distribute parallel for map(tofrom : v[0:n]) reduction(+ : total)
  for (int i = 0; i < n; i++) {
    v[i] = v[i] * factor + shared_offset;
    total += v[i];
  }
  return total;
}
