// A GPU kernel calls the host through the plugin's RPC server in LLVM 19's protocol: the
// client is reached through the pointer __llvm_libc_rpc_client, as LLVM 19's GPU libc defines
// it, and requests carry LLVM 19's 16-bit opcodes. The kernel calls a host function, writes a
// line, prints, writes a file, allocates and frees device memory, each request made as LLVM
// 19's GPU libc makes it. The GPU image has no GPU libc (Debian ships none), so its calls are
// empty; its x86-64 twin, which the emulated drivers run, has LLVM 19's client (rpc.h of the
// LLVM 19 sources) and its own __llvm_libc_rpc_client, which the emulators give the GPU
// image's global: the twin is then the real client of the same server.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if !defined(__AMDGPU__) && !defined(__NVPTX__)
#include "src/__support/RPC/rpc.h"
#include "include/llvm-libc-types/rpc_opcodes_t.h"
namespace rpc = LIBC_NAMESPACE::rpc;
#define TWIN 1
#else
#define TWIN 0
#endif

#pragma omp begin declare target
// The client object (a global, as LLVM 19's libc's rpc::client is) and the pointer to it, in
// every image: the GPU image's pointer is the one the plugin reads, and the twin's globals are
// the ones the emulators give the GPU image's.
#if TWIN
extern "C" [[gnu::visibility("protected")]] rpc::Client rpc_client_object;
[[gnu::used, gnu::weak]] rpc::Client rpc_client_object;
#else
extern "C" [[gnu::visibility("protected")]] unsigned long long rpc_client_object[552 / 8];
[[gnu::used, gnu::weak]] unsigned long long rpc_client_object[552 / 8];
#endif
extern "C" [[gnu::visibility("protected")]] const void *__llvm_libc_rpc_client;
[[gnu::used, gnu::weak]] const void *__llvm_libc_rpc_client = &rpc_client_object;

#if TWIN
static rpc::Client &client() {
  return *const_cast<rpc::Client *>(static_cast<const rpc::Client *>(__llvm_libc_rpc_client));
}
#endif

// LLVM 19's rpc_host_call: the function's result does not come back.
static void host_call(void *fn, void *data, unsigned long long size) {
#if TWIN
  rpc::Client::Port port = client().open<RPC_HOST_CALL>();
  port.send_n(data, size);
  port.send([=](rpc::Buffer *buffer) { buffer->data[0] = reinterpret_cast<uintptr_t>(fn); });
  port.recv([](rpc::Buffer *) {});
  port.close();
#else
  // A use of the client global, as LLVM 19's GPU libc makes: the image keeps it.
  (void)*static_cast<const void *volatile *>(&__llvm_libc_rpc_client);
  (void)fn, (void)data, (void)size;
#endif
}

static unsigned long long device_puts(const char *text) {
#if TWIN
  rpc::Client::Port port = client().open<RPC_WRITE_TO_STDOUT_NEWLINE>();
  port.send_n(text, strlen(text));
  unsigned long long written = 0;
  port.recv([&](rpc::Buffer *buffer) { written = buffer->data[0]; });
  port.close();
  return written;
#else
  (void)text;
  return 0;
#endif
}

// printf("%s %d\n", text, value) as LLVM 19's vfprintf_utils.h sends it.
static int device_printf_text_int(const char *text, int value) {
#if TWIN
  const char *format = "%s %d\n";
  struct {
    const char *text;
    int value;
  } args = {text, value};
  rpc::Client::Port port = client().open<RPC_PRINTF_TO_STDOUT>();
  port.send_n(format, strlen(format) + 1);
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
    port.send_n(str, strlen(str) + 1);
  }
  port.close();
  return result;
#else
  (void)text, (void)value;
  return 0;
#endif
}

// fopen(path, "w"), fputs(text), fclose: the bytes written.
static unsigned long long device_write_file(const char *path, const char *text) {
#if TWIN
  rpc::Client::Port open = client().open<RPC_OPEN_FILE>();
  open.send_n(path, strlen(path) + 1);
  uint64_t file = 0;
  open.send_and_recv([](rpc::Buffer *buffer) { memcpy(buffer->data, "w", 2); },
                     [&](rpc::Buffer *buffer) { file = buffer->data[0]; });
  open.close();
  if (!file)
    return 0;
  rpc::Client::Port write = client().open<RPC_WRITE_TO_STREAM>();
  write.send([=](rpc::Buffer *buffer) { buffer->data[0] = file; });
  write.send_n(text, strlen(text));
  uint64_t written = 0;
  write.recv([&](rpc::Buffer *buffer) { written = buffer->data[0]; });
  write.close();
  rpc::Client::Port close = client().open<RPC_CLOSE_FILE>();
  close.send_and_recv([=](rpc::Buffer *buffer) { buffer->data[0] = file; },
                      [](rpc::Buffer *) {});
  close.close();
  return written;
#else
  (void)path, (void)text;
  return 0;
#endif
}

static void *device_malloc(unsigned long long size) {
#if TWIN
  rpc::Client::Port port = client().open<RPC_MALLOC>();
  void *result = nullptr;
  port.send_and_recv([=](rpc::Buffer *buffer) { buffer->data[0] = size; },
                     [&](rpc::Buffer *buffer) { result = reinterpret_cast<void *>(buffer->data[0]); });
  port.close();
  return result;
#else
  (void)size;
  return nullptr;
#endif
}

static void device_free(void *address) {
#if TWIN
  rpc::Client::Port port = client().open<RPC_FREE>();
  port.send([=](rpc::Buffer *buffer) { buffer->data[0] = reinterpret_cast<uintptr_t>(address); });
  port.close();
#else
  (void)address;
#endif
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

int main(int argc, char **argv) {
  void *fn = reinterpret_cast<void *>(&keep_sum_times_ten);
  unsigned long long written = 0, filed = 0;
  int wrote = 0, printed = 0;
  char path[4096];
  snprintf(path, sizeof path, "%s.txt", argv[0]);
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
  return host_result == 360 ? 0 : 1;
}
