// RULE: static destructors of declare target C++ globals in the device image run when the image is unloaded at program exit
// NOT-ON-EMULATOR: amdgpu: printf in AMDGPU device code needs LLVM's GPU libc (rpc_fprintf), which Debian's LLVM 19 does not ship, so the program has no gfx90a build
// NOT-ON-EMULATOR: cuda: the emulator cannot run the image's nvptx$device$fini kernel (its x86-64 twin has none), and the twin's own ELF destructors would print the lines instead
// EXPECT: value=42
// EXPECT: device destructor ran for 1
// EXPECT: device destructor ran for 2
// REJECT-STDERR: unloading image failed
#include <cstdio>

// Two objects: with exactly one device destructor, the nvptx$device$fini kernel of LLVM's NVPTX
// back end (19 and later) calls none (its loop starts at the last entry and runs only while
// that is above the first). LLVM 19's runtime misses it the same way on an H100.
struct Tracker {
  int value;
  int id;
  int on_host = 1;
  explicit Tracker(int id) : value(42), id(id) {}
  ~Tracker() {
    // Only the device copies report: the host copies are told apart by their flag.
    if (!on_host) std::printf("device destructor ran for %d\n", id);
  }
};

#pragma omp declare target
Tracker first(1), second(2);
#pragma omp end declare target

int main() {
  int value = 0;
#pragma omp target map(from: value)
  {
    first.on_host = second.on_host = 0;
    value = first.value;
  }
  std::printf("value=%d\n", value);
  std::fflush(stdout);
  return value != 42;
}
