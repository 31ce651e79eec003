// RULE: static destructors of declare target C++ globals in the device image run when the image is unloaded at program exit
// NOT-ON-EMULATOR: amdgpu: printf in AMDGPU device code needs LLVM's GPU libc (rpc_fprintf), which Debian's LLVM 19 does not ship, so the program has no gfx90a build
// EXPECT: value=42
// EXPECT: device destructor ran
#include <cstdio>

struct Tracker {
  int value;
  Tracker() : value(42) {}
  ~Tracker() {
    // Only the device copy reports: the host copy is told apart by its flag.
    if (!on_host) std::printf("device destructor ran\n");
  }
  int on_host = 1;
};

#pragma omp declare target
Tracker tracker;
#pragma omp end declare target

int main() {
  int value = 0;
#pragma omp target map(from: value)
  {
    tracker.on_host = 0;
    value = tracker.value;
  }
  std::printf("value=%d\n", value);
  std::fflush(stdout);
  return value != 42;
}
