// A GPU kernel calls the host through the plugin's RPC server in LLVM 19's protocol: the
// client is reached through the pointer __llvm_libc_rpc_client, as LLVM 19's GPU libc defines
// it, and requests carry LLVM 19's 16-bit opcodes. The kernel calls a host function, writes a
// line, prints, writes a file, allocates and frees device memory, each request made as LLVM
// 19's GPU libc makes it, with the client of LLVM 19's rpc.h (its libc sources): in the GPU
// image as LLVM's libc has it (Debian ships no GPU libc), so that on a GPU the requests are
// real; in the x86-64 twin, which the emulated drivers run, in its GPU form over host threads.
// The twin has its own __llvm_libc_rpc_client and client, which the emulators give the GPU
// image's globals: the twin is then the real client of the same server. Built by clang-19, as a
// user of LLVM 19's libc builds, so that LLVM 19's runtime can run it as the judge.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if !defined(__AMDGPU__) && !defined(__NVPTX__)
#if defined(TWIN_LANES)
// The twin's client addresses the mailbox as the GPU's does: rpc.h's GPU form, a warp of
// TWIN_LANES lanes (the GPU's: 64 for gfx90a, 32 for sm_90) of which the calling thread is the
// one active lane, so that its port's buffer is where the server, told the GPU's lanes, reads
// it. Each host thread of a twin kernel is then a warp of its own, on a port of its own. The
// lane primitives (LLVM 19's src/__support/GPU/utils.h) are given here in place of that header.
#define LIBC_TARGET_ARCH_IS_GPU
#define LLVM_LIBC_SRC___SUPPORT_GPU_UTILS_H
#include "src/__support/macros/config.h"
#include <stdint.h>
namespace LIBC_NAMESPACE_DECL {
namespace gpu {
inline uint32_t get_lane_size() { return TWIN_LANES; }
inline uint64_t get_lane_mask() { return 1; }
inline uint32_t get_lane_id() { return 0; }
inline uint32_t get_cluster_id() { return 0; }
inline bool is_first_lane(uint64_t) { return true; }
inline void sync_lane(uint64_t) {}
inline uint64_t ballot(uint64_t, bool x) { return x; }
inline uint32_t broadcast_value(uint64_t, uint32_t x) { return x; }
} // namespace gpu
} // namespace LIBC_NAMESPACE_DECL
#endif
#endif
#include "src/__support/RPC/rpc.h"
#include "include/llvm-libc-types/rpc_opcodes_t.h"
namespace rpc = LIBC_NAMESPACE::rpc;

#pragma omp begin declare target
// The client object (a global, as LLVM 19's libc's rpc::client is) and the pointer to it, in
// every image: the GPU image's pointer is the one the plugin reads, and the twin's globals are
// the ones the emulators give the GPU image's.
extern "C" [[gnu::visibility("protected")]] rpc::Client rpc_client_object;
[[gnu::used, gnu::weak]] rpc::Client rpc_client_object;
extern "C" [[gnu::visibility("protected")]] const void *__llvm_libc_rpc_client;
[[gnu::used, gnu::weak]] const void *__llvm_libc_rpc_client = &rpc_client_object;

// The client, through the pointer the plugin reads. The GPU image also reads the client object
// itself, as LLVM 19's libc code does: clang-19's OpenMP optimisation drops both globals when
// nothing but the pointer's initializer names the object.
static rpc::Client &client() {
  (void)reinterpret_cast<volatile unsigned long long *>(&rpc_client_object)[1];
  return *const_cast<rpc::Client *>(static_cast<const rpc::Client *>(__llvm_libc_rpc_client));
}

#if defined(__AMDGPU__) || defined(__NVPTX__)
// The copies of rpc.h's send_n and recv_n: a GPU image has no libc to take memcpy from.
extern "C" void *memcpy(void *dst, const void *src, size_t size) {
  unsigned char *to = static_cast<unsigned char *>(dst);
  const unsigned char *from = static_cast<const unsigned char *>(src);
  for (size_t i = 0; i < size; i++)
    to[i] = from[i];
  return dst;
}
#endif

// strlen, which a GPU image has no libc to take from either.
static unsigned long long length(const char *text) {
  unsigned long long n = 0;
  while (text[n])
    n++;
  return n;
}

// LLVM 19's rpc_host_call: the function's result does not come back.
static void host_call(void *fn, void *data, unsigned long long size) {
  rpc::Client::Port port = client().open<RPC_HOST_CALL>();
  port.send_n(data, size);
  port.send([=](rpc::Buffer *buffer) { buffer->data[0] = reinterpret_cast<uintptr_t>(fn); });
  port.recv([](rpc::Buffer *) {});
  port.close();
}

static unsigned long long device_puts(const char *text) {
  rpc::Client::Port port = client().open<RPC_WRITE_TO_STDOUT_NEWLINE>();
  port.send_n(text, length(text));
  unsigned long long written = 0;
  port.recv([&](rpc::Buffer *buffer) { written = buffer->data[0]; });
  port.close();
  return written;
}

// printf("%s %d\n", text, value) as LLVM 19's vfprintf_utils.h sends it.
static int device_printf_text_int(const char *text, int value) {
  const char *format = "%s %d\n";
  struct {
    const char *text;
    int value;
  } args = {text, value};
  rpc::Client::Port port = client().open<RPC_PRINTF_TO_STDOUT>();
  port.send_n(format, length(format) + 1);
  uint64_t size = 0;
  port.recv([&](rpc::Buffer *buffer) { size = buffer->data[0]; });
  port.send_n(&args, size < sizeof args ? size : sizeof args);
  int result = 0;
  for (;;) {
    const char *str = nullptr;
    port.recv([&](rpc::Buffer *buffer) {
      result = static_cast<int>(buffer->data[0]);
      str = reinterpret_cast<const char *>(buffer->data[1]);
    });
    if (!str)
      break;
    port.send_n(str, length(str) + 1);
  }
  port.close();
  return result;
}

// fopen(path, "w"), fputs(text), fclose: the bytes written.
static unsigned long long device_write_file(const char *path, const char *text) {
  rpc::Client::Port open = client().open<RPC_OPEN_FILE>();
  open.send_n(path, length(path) + 1);
  uint64_t file = 0;
  open.send_and_recv([](rpc::Buffer *buffer) { memcpy(buffer->data, "w", 2); },
                     [&](rpc::Buffer *buffer) { file = buffer->data[0]; });
  open.close();
  if (!file)
    return 0;
  rpc::Client::Port write = client().open<RPC_WRITE_TO_STREAM>();
  write.send([=](rpc::Buffer *buffer) { buffer->data[0] = file; });
  write.send_n(text, length(text));
  uint64_t written = 0;
  write.recv([&](rpc::Buffer *buffer) { written = buffer->data[0]; });
  write.close();
  rpc::Client::Port close = client().open<RPC_CLOSE_FILE>();
  close.send_and_recv([=](rpc::Buffer *buffer) { buffer->data[0] = file; },
                      [](rpc::Buffer *) {});
  close.close();
  return written;
}

static void *device_malloc(unsigned long long size) {
  rpc::Client::Port port = client().open<RPC_MALLOC>();
  void *result = nullptr;
  port.send_and_recv([=](rpc::Buffer *buffer) { buffer->data[0] = size; },
                     [&](rpc::Buffer *buffer) { result = reinterpret_cast<void *>(buffer->data[0]); });
  port.close();
  return result;
}

static void device_free(void *address) {
  rpc::Client::Port port = client().open<RPC_FREE>();
  port.send([=](rpc::Buffer *buffer) { buffer->data[0] = reinterpret_cast<uintptr_t>(address); });
  port.close();
}
#pragma omp end declare target

// The host function the device calls: keeps the sum of the block's ints, times ten.
static unsigned long long host_result;
extern "C" void keep_sum_times_ten(void *data) {
  int *values = static_cast<int *>(data);
  unsigned long long sum = 0;
  for (int i = 0; i < 8; i++)
    sum += values[i];
  host_result = sum * 10;
}

// The host function of the threads' calls: adds the sum of the block's ints, times ten, to
// the total of the thread the block's first int names.
static const int threads = 8;
static unsigned long long thread_totals[threads];
extern "C" void add_sum_times_ten(void *data) {
  int *values = static_cast<int *>(data);
  unsigned long long sum = 0;
  for (int i = 0; i < 8; i++)
    sum += values[i];
  if (values[0] >= 0 && values[0] < threads)
    __atomic_fetch_add(&thread_totals[values[0]], sum * 10, __ATOMIC_RELAXED);
}

int main(int argc, char **argv) {
  void *fn = reinterpret_cast<void *>(&keep_sum_times_ten);
  unsigned long long written = 0, filed = 0;
  int wrote = 0, printed = 0;
  // The file the kernel writes: the first argument, else the program's path with .txt.
  char path[4096];
  snprintf(path, sizeof path, argc > 1 ? "%s" : "%s.txt", argc > 1 ? argv[1] : argv[0]);
#pragma omp target map(from : written, wrote, printed, filed) firstprivate(fn) map(to : path)
  {
    int values[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    host_call(fn, values, sizeof values);
    written = device_puts("hello from the device (LLVM 19)");
    printed = device_printf_text_int("printf from the device:", 19);
    filed = device_write_file(path, "written by the device\n");
    // Last: a free is not answered (see rpc_host_call.cpp).
    int *block = static_cast<int *>(device_malloc(64 * sizeof(int)));
    if (block) {
      for (int i = 0; i < 64; i++)
        block[i] = i;
      wrote = block[63];
      device_free(block);
    }
  }
  fflush(stdout);
  printf("host call: %llu (expected 360); puts wrote %llu; device malloc: %d\n", host_result,
         written, wrote);
  printf("device printf: %d; device file: %llu bytes\n", printed, filed);
  unsigned long long first = host_result;

  // Threads of one kernel call at once, each a warp of its own on a twin; a free (which is not
  // answered) is followed at once by the next request, which then takes another port while
  // the server has not yet taken the free.
  const int rounds = 50;
  int blocks[threads] = {0};
  void *add = reinterpret_cast<void *>(&add_sum_times_ten);
#pragma omp target map(from : blocks) firstprivate(add)
#pragma omp parallel num_threads(threads)
  {
    int t = omp_get_thread_num();
    int good = 0;
    for (int i = 0; i < rounds; i++) {
      int values[8] = {t, i, 1, 1, 1, 1, 1, 1};
      host_call(add, values, sizeof values);
      int *block = static_cast<int *>(device_malloc(16 * sizeof(int)));
      if (block) {
        block[15] = t * 1000 + i;
        good += block[15] == t * 1000 + i;
        device_free(block);
      }
    }
    if (t < threads)
      blocks[t] = good;
  }
  int calls_right = 0, blocks_right = 0;
  for (int t = 0; t < threads; t++) {
    // Each call adds (t + i + 6) * 10.
    calls_right +=
        thread_totals[t] == 10ull * (rounds * t + rounds * (rounds - 1) / 2 + 6 * rounds);
    blocks_right += blocks[t] == rounds;
  }
  printf("threads at once: host calls right in %d of %d, device blocks in %d\n", calls_right,
         threads, blocks_right);
  return first == 360 && calls_right == threads ? 0 : 1;
}
