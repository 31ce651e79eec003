// RULE: every device has a unique identifier (OpenMP 6.0): omp_get_device_from_uid inverts omp_get_uid_from_device, the initial device's is "HOST", and null or unknown identifiers give omp_invalid_device
// COMPILERS: clang22
// EXPECT: devices=4 distinct=yes inverse=yes host=HOST invalid=yes
#include <omp.h>
#include <stdio.h>
#include <string.h>

int main(void) {
  int n = omp_get_num_devices();
  int inverse = 1, distinct = 1;
  for (int d = 0; d <= n; d++) {
    const char *uid = omp_get_uid_from_device(d);
    if (!uid || omp_get_device_from_uid(uid) != d)
      inverse = 0;
    for (int e = 0; e < d; e++)
      if (uid && strcmp(uid, omp_get_uid_from_device(e)) == 0)
        distinct = 0;
  }
  const char *host = omp_get_uid_from_device(omp_get_initial_device());
  int invalid = omp_get_device_from_uid(NULL) == omp_invalid_device &&
                omp_get_device_from_uid("no such device") == omp_invalid_device &&
                omp_get_uid_from_device(omp_invalid_device) == NULL;
  printf("devices=%d distinct=%s inverse=%s host=%s invalid=%s\n", n, distinct ? "yes" : "no",
         inverse ? "yes" : "no", host ? host : "(null)", invalid ? "yes" : "no");
  return !(distinct && inverse && invalid && host && strcmp(host, "HOST") == 0);
}
// NEEDS: 4 devices
