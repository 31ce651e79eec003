// OpenMP 6.0 device identifiers (LLVM 22): every device's UID maps back to its number, the
// initial device is "HOST", null and unknown UIDs are omp_invalid_device. With an argument, also
// a device number that is no device (LLVM 22 aborts there; ours answers NULL).
// EXPECT: uid ok
#include <omp.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
  (void)argv;
  int failures = 0;
  for (int d = 0; d <= omp_get_num_devices(); d++) {
    const char *uid = omp_get_uid_from_device(d);
    printf("device %d uid %s\n", d, uid ? uid : "(null)");
    if (!uid || omp_get_device_from_uid(uid) != d)
      failures++;
  }
  if (omp_get_uid_from_device(omp_invalid_device) != NULL)
    failures++;
  if (omp_get_device_from_uid(NULL) != omp_invalid_device ||
      omp_get_device_from_uid("no such device") != omp_invalid_device ||
      omp_get_device_from_uid("HOST") != omp_get_initial_device())
    failures++;
  if (argc > 1 && omp_get_uid_from_device(omp_get_num_devices() + 5) != NULL)
    failures++;
  if (failures) {
    printf("%d failures\n", failures);
    return 1;
  }
  printf("uid ok\n");
  return 0;
}
