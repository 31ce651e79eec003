// Calls __tgt_target_kernel with a host pointer that is no registered target region.
#include <stdint.h>
#include <stdio.h>
#include <string.h>
struct KernelArgs {
  uint32_t Version, NumArgs;
  void **ArgBasePtrs, **ArgPtrs;
  int64_t *ArgSizes, *ArgTypes;
  void **ArgNames, **ArgMappers;
  uint64_t Tripcount, Flags;
  uint32_t NumTeams[3], ThreadLimit[3], DynCGroupMem;
};
void __tgt_init_all_rtls(void);
int __tgt_target_kernel(void *Loc, int64_t DeviceId, int32_t NumTeams, int32_t ThreadLimit, void *HostPtr,
                        struct KernelArgs *Args);
static char not_a_region;
int main(void) {
  // No image is registered, so no device would be numbered: start every plugin and number its
  // devices, as a tool does.
  __tgt_init_all_rtls();
  struct KernelArgs args;
  memset(&args, 0, sizeof args);
  args.Version = 3;
  int rc = __tgt_target_kernel(NULL, 0, 1, 1, &not_a_region, &args);
  printf("rc %d\n", rc);
  rc = __tgt_target_kernel(NULL, 0, 1, 1, &not_a_region, NULL);
  printf("null args rc %d\n", rc);
  return 0;
}
