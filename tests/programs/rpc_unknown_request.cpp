// A kernel sends the host a request no server knows, then waits for its answer, which never
// comes: a device whose libc is newer than the plugin, or a damaged client. The plugin must
// report the request's opcode and fail the kernel, so that the program ends with the error
// instead of waiting for ever. The GPU image only holds the client global (on a real GPU the
// kernel makes no call); its x86-64 twin, which the emulated drivers run, has LLVM 22's client
// in its GPU form (rpc_twin_lanes.h) and is the real client of the server.
#include <omp.h>
#include <stdio.h>

#include "rpc_twin_lanes.h"
#include "rpc.h"

#pragma omp begin declare target
extern "C" [[gnu::visibility("default")]] rpc::Client __llvm_rpc_client;
rpc::Client __llvm_rpc_client;

// Opcode 'z' << 24 | 7: in no release's list.
static void unknown_request() {
#if !defined(__AMDGPU__) && !defined(__NVPTX__)
  rpc::Client::Port port = __llvm_rpc_client.open<0x7a000007>();
  port.send([](rpc::Buffer *buffer, uint32_t) { buffer->data[0] = 1; });
  port.recv([](rpc::Buffer *, uint32_t) {});
  port.close();
#else
  // A use of the client, as a GPU libc's call makes: the image keeps the global.
  (void)*static_cast<volatile char *>(static_cast<void *>(&__llvm_rpc_client));
#endif
}
#pragma omp end declare target

// With an argument, the kernel is a `nowait` one, whose task polls its queue.
int main(int argc, char **argv) {
  int before = 0;
#pragma omp target map(from : before)
  before = 1;
  printf("a kernel without requests: %d\n", before);
  fflush(stdout);
  if (argc > 1) {
#pragma omp target nowait
    unknown_request();
#pragma omp taskwait
  } else {
#pragma omp target
    unknown_request();
  }
  printf("the kernel with the unknown request returned\n");
  return 0;
}
