// Page-locking is the process's, not a device's: a buffer locked through two devices stays
// registered with the driver until both unlock it, through a region on the second device.
#include <omp.h>
#include <stdio.h>

void *llvm_omp_target_lock_mem(void *ptr, size_t size, int device_num);
void llvm_omp_target_unlock_mem(void *ptr, int device_num);

static int buffer[1 << 16];

int main(void) {
  if (omp_get_num_devices() < 2) {
    printf("needs two devices\n");
    return 1;
  }
  void *first = llvm_omp_target_lock_mem(buffer, sizeof buffer, 0);
  void *second = llvm_omp_target_lock_mem(buffer, sizeof buffer, 1);
  llvm_omp_target_unlock_mem(buffer, 0);
#pragma omp target device(1) map(tofrom : buffer[0 : 1 << 16])
  buffer[0] = 7;
  llvm_omp_target_unlock_mem(buffer, 1);
  printf("locked=%d same=%d buffer0=%d\n", first != 0, first == second, buffer[0]);
  return !(first && first == second && buffer[0] == 7);
}
