// A GPU kernel calls the host through the plugin's RPC server: __llvm_omp_host_call (LLVM 22's
// OpenMP device runtime) runs a host function on a block of data, and the kernel writes a line
// to stdout, allocates and frees device memory the way LLVM's GPU libc does (puts, malloc and
// free go over the same client). The GPU image takes all of it from LLVM 22's device runtime.
// Its x86-64 twin, which the emulated drivers run, has the client of LLVM 22's rpc.h itself
// (this file, for the x86-64 device only), and its own __llvm_rpc_client, which the emulators
// give the GPU image's global: the twin is then the real client of the same server.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "rpc_twin_lanes.h"
#include "rpc.h"
#include "rpc_opcodes.h"
#include "Shared/RPCOpcodes.h"

extern "C" unsigned long long __llvm_omp_host_call(void *fn, void *data, size_t size);

#pragma omp begin declare target
// The client object, in every image (the device runtime's own is weak): the GPU image's is the
// one the plugin fills in, and the twin's the one the emulators give the GPU image's global.
extern "C" [[gnu::visibility("default")]] rpc::Client __llvm_rpc_client;
rpc::Client __llvm_rpc_client;

#if !defined(__AMDGPU__) && !defined(__NVPTX__)
// The twin's __llvm_omp_host_call, as LLVM 22's device runtime makes the call.
extern "C" unsigned long long __llvm_omp_host_call(void *fn, void *data, size_t size) {
  rpc::Client::Port port = __llvm_rpc_client.open<OFFLOAD_HOST_CALL>();
  port.send_n(data, size);
  port.send([=](rpc::Buffer *buffer, uint32_t) {
    buffer->data[0] = reinterpret_cast<uintptr_t>(fn);
  });
  unsigned long long ret = 0;
  port.recv([&](rpc::Buffer *buffer, uint32_t) { ret = buffer->data[0]; });
  port.close();
  return ret;
}
#endif
#pragma omp end declare target

#pragma omp begin declare target
// puts, malloc and free as LLVM's GPU libc sends them, made through the twin's client: the
// GPU image has no GPU libc linked, so on a real GPU these are empty (the program is for the
// emulated drivers).
static unsigned long long rpc_puts(const char *text) {
#if !defined(__AMDGPU__) && !defined(__NVPTX__)
  rpc::Client::Port port = __llvm_rpc_client.open<LIBC_WRITE_TO_STDOUT_NEWLINE>();
  port.send_n(text, strlen(text));
  unsigned long long written = 0;
  port.recv([&](rpc::Buffer *buffer, uint32_t) { written = buffer->data[0]; });
  port.close();
  return written;
#else
  (void)text;
  return 0;
#endif
}

static void *rpc_malloc(unsigned long long size) {
#if !defined(__AMDGPU__) && !defined(__NVPTX__)
  rpc::Client::Port port = __llvm_rpc_client.open<LIBC_MALLOC>();
  void *result = nullptr;
  port.send_and_recv([=](rpc::Buffer *buffer, uint32_t) { buffer->data[0] = size; },
                     [&](rpc::Buffer *buffer, uint32_t) {
                       result = reinterpret_cast<void *>(buffer->data[0]);
                     });
  port.close();
  return result;
#else
  (void)size;
  return nullptr;
#endif
}

static void rpc_free(void *address) {
#if !defined(__AMDGPU__) && !defined(__NVPTX__)
  rpc::Client::Port port = __llvm_rpc_client.open<LIBC_FREE>();
  port.send([=](rpc::Buffer *buffer, uint32_t) {
    buffer->data[0] = reinterpret_cast<uintptr_t>(address);
  });
  port.close();
#else
  (void)address;
#endif
}

// printf("%s %d\n", text, value) to stdout as LLVM's GPU libc sends it: the format, then (told
// their size) the arguments packed as the device packs its va_list, then the text of the %s
// argument when the server asks for it.
static int rpc_printf_text_int(const char *text, int value) {
#if !defined(__AMDGPU__) && !defined(__NVPTX__)
  const char *format = "%s %d\n";
  struct {
    const char *text;
    int value;
  } args = {text, value};
  rpc::Client::Port port = __llvm_rpc_client.open<LIBC_PRINTF_TO_STDOUT>();
  port.send_n(format, strlen(format) + 1);
  uint64_t size = 0;
  port.recv([&](rpc::Buffer *buffer, uint32_t) { size = buffer->data[0]; });
  port.send_n(&args, size < sizeof args ? size : sizeof args);
  int result = 0;
  for (;;) {
    const char *str = nullptr;
    port.recv([&](rpc::Buffer *buffer, uint32_t) {
      result = static_cast<int>(buffer->data[0]);
      str = reinterpret_cast<const char *>(buffer->data[1]);
    });
    if (!str)
      break;
    port.send_n(str, strlen(str) + 1);
  }
  port.close();
  return result;
#else
  (void)text;
  (void)value;
  return 0;
#endif
}

// fopen(path, "w"), fputs(text) and fclose as LLVM's GPU libc sends them: the bytes written.
static unsigned long long rpc_write_file(const char *path, const char *text) {
#if !defined(__AMDGPU__) && !defined(__NVPTX__)
  rpc::Client::Port open = __llvm_rpc_client.open<LIBC_OPEN_FILE>();
  open.send_n(path, strlen(path) + 1);
  uint64_t file = 0;
  open.send_and_recv([](rpc::Buffer *buffer, uint32_t) { memcpy(buffer->data, "w", 2); },
                     [&](rpc::Buffer *buffer, uint32_t) { file = buffer->data[0]; });
  open.close();
  if (!file)
    return 0;
  rpc::Client::Port write = __llvm_rpc_client.open<LIBC_WRITE_TO_STREAM>();
  write.send([=](rpc::Buffer *buffer, uint32_t) { buffer->data[0] = file; });
  write.send_n(text, strlen(text));
  uint64_t written = 0;
  write.recv([&](rpc::Buffer *buffer, uint32_t) { written = buffer->data[0]; });
  write.close();
  rpc::Client::Port close = __llvm_rpc_client.open<LIBC_CLOSE_FILE>();
  close.send_and_recv([=](rpc::Buffer *buffer, uint32_t) { buffer->data[0] = file; },
                      [](rpc::Buffer *, uint32_t) {});
  close.close();
  return written;
#else
  (void)path;
  (void)text;
  return 0;
#endif
}
#pragma omp end declare target

// The host function the device calls: the sum of the block's ints, times ten.
extern "C" unsigned long long sum_times_ten(void *data) {
  int *values = static_cast<int *>(data);
  unsigned long long sum = 0;
  for (int i = 0; i < 8; i++)
    sum += values[i];
  return sum * 10;
}

// A host function that keeps its caller waiting a second.
extern "C" unsigned long long sleep_a_second(void *) {
  usleep(1000000);
  return 0;
}

static double cpu_seconds(int who) {
  struct rusage usage;
  getrusage(who, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
         1e-6 * (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

// A kernel that waits a second for the host: the CPU time of the thread waiting for it (on
// stderr).
static void time_waiting() {
  void *sleeper = reinterpret_cast<void *>(&sleep_a_second);
  // The image's loading first, untimed: it is not the wait's.
  int loaded = 0;
#pragma omp target map(from : loaded)
  loaded = 1;
  double waiting = cpu_seconds(RUSAGE_THREAD);
  double start = omp_get_wtime();
#pragma omp target firstprivate(sleeper)
  __llvm_omp_host_call(sleeper, nullptr, 0);
  double seconds = omp_get_wtime() - start;
  waiting = cpu_seconds(RUSAGE_THREAD) - waiting;
  fprintf(stderr, "waiting: %.1f ms CPU in %.0f ms\n", waiting * 1e3, seconds * 1e3);
}

// With a count: that many host calls, then that many device printfs, in one kernel each,
// timed (on stderr), for the cost of a round trip; then `time_waiting`; then the CPU time the
// process uses in a second with no kernel running (an idle server's). The program then ends.
static void time_calls(void *fn, int calls) {
  unsigned long long result = 0;
  // One call first, untimed: the image's loading and the server's start are not a call's.
#pragma omp target firstprivate(fn)
  {
    int values[8] = {0};
    __llvm_omp_host_call(fn, values, sizeof values);
  }
  double start = omp_get_wtime();
#pragma omp target map(tofrom : result) firstprivate(fn, calls)
  {
    int values[8] = {0};
    for (int i = 0; i < calls; i++) {
      values[0] = i;
      result += __llvm_omp_host_call(fn, values, sizeof values);
    }
  }
  double seconds = omp_get_wtime() - start;
  fprintf(stderr, "%d host calls: %.2f us each\n", calls, seconds * 1e6 / calls);
  start = omp_get_wtime();
#pragma omp target firstprivate(calls)
  {
    for (int i = 0; i < calls; i++)
      rpc_printf_text_int("printf from the device:", i);
  }
  seconds = omp_get_wtime() - start;
  fflush(stdout);
  fprintf(stderr, "%d device printfs: %.2f us each\n", calls, seconds * 1e6 / calls);
  time_waiting();
  double cpu = cpu_seconds(RUSAGE_SELF);
  double idle_start = omp_get_wtime();
  usleep(1000000);
  double idle = omp_get_wtime() - idle_start;
  cpu = cpu_seconds(RUSAGE_SELF) - cpu;
  fprintf(stderr, "idle: %.1f ms CPU in %.0f ms\n", cpu * 1e3, idle * 1e3);
}

int main(int argc, char **argv) {
  void *fn = reinterpret_cast<void *>(&sum_times_ten);
  unsigned long long result = 0, written = 0, filed = 0;
  int wrote = 0, printed = 0;
  // The file the device writes: the program's own path with .txt (the twin reads it in place).
  char path[4096];
  snprintf(path, sizeof path, "%s.txt", argv[0]);
  if (argc > 1 && strcmp(argv[1], "wait") == 0) {
    time_waiting();
    return 0;
  }
  if (argc > 1 && atoi(argv[1]) > 0) {
    time_calls(fn, atoi(argv[1]));
    return 0;
  }
#pragma omp target map(from : result, written, wrote, printed, filed) firstprivate(fn)         \
    map(to : path)
  {
    int values[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    result = __llvm_omp_host_call(fn, values, sizeof values);
    written = rpc_puts("hello from the device");
    printed = rpc_printf_text_int("printf from the device:", 42);
    filed = rpc_write_file(path, "written by the device\n");
    int *block = static_cast<int *>(rpc_malloc(64 * sizeof(int)));
    if (block) {
      for (int i = 0; i < 64; i++)
        block[i] = i;
      wrote = block[63];
      rpc_free(block);
    }
  }
  fflush(stdout);
  printf("host call: %llu (expected 360); puts wrote %llu; device malloc: %d\n", result,
         written, wrote);
  printf("device printf: %d; device file: %llu bytes\n", printed, filed);
  unsigned long long first = result;

  // Threads of one kernel call at once, each a warp of its own on a twin; a free (which is not
  // answered) is followed at once by the next request, which then takes another port while
  // the server has not yet taken the free.
  const int threads = 8, rounds = 50;
  unsigned long long sums[threads] = {0};
  int blocks[threads] = {0};
#pragma omp target map(from : sums, blocks) firstprivate(fn)
#pragma omp parallel num_threads(threads)
  {
    int t = omp_get_thread_num();
    unsigned long long sum = 0;
    int good = 0;
    for (int i = 0; i < rounds; i++) {
      int values[8] = {t, i, 1, 1, 1, 1, 1, 1};
      sum += __llvm_omp_host_call(fn, values, sizeof values);
      int *block = static_cast<int *>(rpc_malloc(16 * sizeof(int)));
      if (block) {
        block[15] = t * 1000 + i;
        good += block[15] == t * 1000 + i;
        rpc_free(block);
      }
    }
    if (t < threads) {
      sums[t] = sum;
      blocks[t] = good;
    }
  }
  int calls_right = 0, blocks_right = 0;
  for (int t = 0; t < threads; t++) {
    // Each call answers (t + i + 6) * 10.
    calls_right += sums[t] == 10ull * (rounds * t + rounds * (rounds - 1) / 2 + 6 * rounds);
    blocks_right += blocks[t] == rounds;
  }
  printf("threads at once: host calls right in %d of %d, device blocks in %d\n", calls_right,
         threads, blocks_right);
  // The host calls are what a GPU image can make here (puts and malloc need the twin's client).
  return first == 360 && calls_right == threads ? 0 : 1;
}
