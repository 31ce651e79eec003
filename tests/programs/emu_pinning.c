// Page-locking counts: locked twice, unlocked once, the buffer stays registered with the driver
// through the next target region; the second unlock unregisters it. With EMU_PIN_LEAVE_LOCKED
// set, the second unlock is left out: the plugin unlocks the buffer when it shuts down.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

void *llvm_omp_target_lock_mem(void *ptr, size_t size, int device_num);
void llvm_omp_target_unlock_mem(void *ptr, int device_num);

static int buffer[1 << 16];

int main(void) {
  int device = omp_get_default_device();
  void *first = llvm_omp_target_lock_mem(buffer, sizeof buffer, device);
  void *second = llvm_omp_target_lock_mem(buffer, sizeof buffer, device);
  llvm_omp_target_unlock_mem(buffer, device);
#pragma omp target map(tofrom : buffer[0 : 1 << 16])
  buffer[0] = 7;
  if (!getenv("EMU_PIN_LEAVE_LOCKED"))
    llvm_omp_target_unlock_mem(buffer, device);
  printf("locked=%d same=%d buffer0=%d\n", first != 0, first == second, buffer[0]);
  return !(first && first == second && buffer[0] == 7);
}
