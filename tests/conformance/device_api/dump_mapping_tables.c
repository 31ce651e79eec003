// RULE: ompx_dump_mapping_tables prints every device's mapping table on stdout (not stderr), even without LIBOMPTARGET_INFO
// FLAGS: -g
// EXPECT: omptarget device 0 info: OpenMP Host-Device pointer mappings table empty
// EXPECT: omptarget device 1 info: OpenMP Host-Device pointer mappings after block at libomptarget:0:0:
// EXPECT: omptarget device 1 info: Host Ptr           Target Ptr         Size (B) DynRefCount HoldRefCount Declaration
// EXPECT: omptarget device 3 info: OpenMP Host-Device pointer mappings table empty
// EXPECT: row=found a[7]=8
// REJECT-STDERR: mappings
#include <omp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void ompx_dump_mapping_tables(void);

int main(void) {
  int a[8], buf[8];
  for (int i = 0; i < 8; i++) a[i] = i;
#pragma omp target enter data map(alloc: buf) device(1)
  // capture fd 1 in a temporary file to look at the row of buf
  char path[] = "/tmp/dumpXXXXXX", out[4096] = {0};
  int fd = mkstemp(path), saved = dup(1);
  fflush(stdout);
  dup2(fd, 1);
  ompx_dump_mapping_tables();
  fflush(stdout);
  dup2(saved, 1);
  pread(fd, out, sizeof out - 1, 0);
  close(fd);
  unlink(path);
  fputs(out, stdout);
  int row = strstr(out, " 32       1           0            buf at ") && strstr(out, "dump_mapping_tables.c:17:");
#pragma omp target map(tofrom: a) device(1)
  for (int i = 0; i < 8; i++) { buf[i] = a[i] + 1; a[i] = buf[i]; }
#pragma omp target exit data map(delete: buf) device(1)
  printf("row=%s a[7]=%d\n", row ? "found" : "missing", a[7]);
  return !(row && a[7] == 8);
}
// NEEDS: 4 devices
