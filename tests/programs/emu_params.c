// A kernel with one pointer argument that writes known values: the emulated CUDA driver's
// kernelParams launch test (tests/tests/emu_cuda_params.rs) launches it by hand.
int main(void) {
  int a[4] = {0};
#pragma omp target map(tofrom : a)
  for (int i = 0; i < 4; i++)
    a[i] = 7 * (i + 1);
  return a[3] != 28;
}
