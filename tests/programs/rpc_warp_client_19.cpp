// LLVM 19's RPC client (libc/src/__support/RPC/rpc.h of the LLVM 19 sources) in the form a GPU
// runs it: compiled here as for a GPU target, whose lane primitives (gpu::ballot,
// gpu::broadcast_value, ...) are given below by host threads, one per lane of a warp
// (rpc_warp.h). So the client takes one port per warp and fills one buffer per lane, with each
// lane's own sizes and data, as a warp of 32 (NVIDIA) or a wavefront of 64 (AMD) does in LLVM
// 19's GPU libc; tests/tests/rpc.rs runs our server against it. The requests are made as LLVM
// 19's GPU libc makes them (libc/src/stdio/gpu, libc/src/gpu/rpc_host_call.cpp).
#include "rpc_warp.h"

#include <stdio.h>

// rpc.h's GPU form: each lane holds its own values and fills its own buffer of the port.
#define LIBC_TARGET_ARCH_IS_GPU
// LLVM 19's lane primitives (src/__support/GPU/utils.h), given here in place of that header.
#define LLVM_LIBC_SRC___SUPPORT_GPU_UTILS_H
#include "src/__support/CPP/atomic.h"
#include "src/__support/macros/config.h"

namespace LIBC_NAMESPACE_DECL {
namespace gpu {
inline uint32_t get_lane_size() { return warp::self.lanes; }
inline uint64_t get_lane_mask() { return warp::self.active; }
inline uint32_t get_lane_id() { return warp::self.id; }
inline uint32_t get_cluster_id() { return 0; }
inline bool is_first_lane(uint64_t mask) { return warp::first(mask); }
inline void sync_lane(uint64_t mask) { warp::meet(mask, 0); }
inline uint64_t ballot(uint64_t mask, bool x) { return warp::ballot(mask, x); }
inline uint32_t broadcast_value(uint64_t mask, uint32_t x) { return warp::broadcast(mask, x); }
} // namespace gpu
} // namespace LIBC_NAMESPACE_DECL

// Lanes meet at rpc.h's fences (rpc_warp.h says why); rpc.h calls the fence unqualified.
inline void warp_fence(LIBC_NAMESPACE::cpp::MemoryOrder order) {
  warp::fence(static_cast<int>(order));
}
#define atomic_thread_fence warp_fence
#include "src/__support/RPC/rpc.h"
#undef atomic_thread_fence
#include "include/llvm-libc-types/rpc_opcodes_t.h"

namespace rpc = LIBC_NAMESPACE::rpc;
namespace gpu = LIBC_NAMESPACE::gpu;
using Client = rpc::Client;
using warp::lane_key;
static_assert(rpc::is_process_gpu(), "the client is in its GPU form");

namespace {

Client &client_of(void *bytes) { return *reinterpret_cast<Client *>(bytes); }

// Each lane's bytes (of rpc_warp_client.cpp's echo, seed 5) written to a file of its own on
// the host, read back, the file closed and removed: fopen, fwrite, fseek, fread, fclose and
// remove as LLVM 19's GPU libc sends them. The bytes that came back, or ~0 when anything
// differs from the bytes sent. `prefix` begins the files' paths.
uint64_t file_round_trip(Client &c, uint32_t warp, uint32_t lane, const char *prefix) {
  std::vector<uint8_t> data = warp::stream_bytes(warp, lane, 5);
  uint64_t size = data.size();
  std::string path = std::string(prefix) + "-" + std::to_string(warp) + "-" + std::to_string(lane);
  uint64_t file = 0;
  {
    Client::Port port = c.open<RPC_OPEN_FILE>();
    port.send_n(path.c_str(), path.size() + 1);
    port.send_and_recv([](rpc::Buffer *buffer) { memcpy(buffer->data, "w+", 3); },
                       [&](rpc::Buffer *buffer) { file = buffer->data[0]; });
    port.close();
  }
  // The warp leaves together, as a GPU's would: a lane left behind would wait for the others.
  if (gpu::ballot(gpu::get_lane_mask(), file == 0))
    return ~0ull;
  uint64_t written = 0;
  {
    Client::Port port = c.open<RPC_WRITE_TO_STREAM>();
    port.send([&](rpc::Buffer *buffer) { buffer->data[0] = file; });
    port.send_n(data.data(), size);
    port.recv([&](rpc::Buffer *buffer) { written = buffer->data[0]; });
    port.close();
  }
  uint64_t sought = ~0ull;
  {
    Client::Port port = c.open<RPC_FSEEK>();
    port.send_and_recv(
        [&](rpc::Buffer *buffer) {
          buffer->data[0] = file;
          buffer->data[1] = 0;
          buffer->data[2] = SEEK_SET;
        },
        [&](rpc::Buffer *buffer) { sought = buffer->data[0]; });
    port.close();
  }
  std::vector<uint8_t> back(size + 1);
  uint64_t got = 0;
  {
    Client::Port port = c.open<RPC_READ_FROM_STREAM>();
    port.send([&](rpc::Buffer *buffer) {
      buffer->data[0] = size;
      buffer->data[1] = file;
    });
    uint64_t sent = 0;
    void *dst = nullptr;
    port.recv_n(&dst, &sent, [&](uint64_t) { return static_cast<void *>(back.data()); });
    port.recv([&](rpc::Buffer *buffer) { got = buffer->data[0]; });
    port.close();
  }
  uint64_t closed = ~0ull;
  {
    Client::Port port = c.open<RPC_CLOSE_FILE>();
    port.send_and_recv([&](rpc::Buffer *buffer) { buffer->data[0] = file; },
                       [&](rpc::Buffer *buffer) { closed = buffer->data[0]; });
    port.close();
  }
  uint64_t removed = ~0ull;
  {
    Client::Port port = c.open<RPC_REMOVE>();
    port.send_n(path.c_str(), path.size() + 1);
    port.recv([&](rpc::Buffer *buffer) { removed = buffer->data[0]; });
    port.close();
  }
  bool right = written == size && sought == 0 && got == size && closed == 0 && removed == 0 &&
               memcmp(data.data(), back.data(), size) == 0;
  return right ? got : ~0ull;
}

// printf as LLVM 19's GPU libc sends it (vfprintf_utils.h), to the stream `stream`, each lane
// with its own arguments (rpc_warp.h). Returns the count the server answered.
uint64_t print(Client &c, uint32_t warp, uint32_t lane, uint64_t stream) {
  warp::PrintArguments args(warp, lane);
  uint64_t mask = gpu::get_lane_mask();
  Client::Port port = c.open<RPC_PRINTF_TO_STREAM>();
  port.send([&](rpc::Buffer *buffer) { buffer->data[0] = stream; });
  uint64_t args_size = 0;
  port.send_n(warp::print_format, sizeof warp::print_format);
  port.recv([&](rpc::Buffer *buffer) { args_size = buffer->data[0]; });
  port.send_n(args.block, args_size > sizeof args.block ? sizeof args.block : args_size);
  uint32_t ret = 0;
  for (;;) {
    const char *wanted = nullptr;
    port.recv([&](rpc::Buffer *buffer) {
      ret = static_cast<uint32_t>(buffer->data[0]);
      wanted = reinterpret_cast<const char *>(buffer->data[1]);
    });
    if (!gpu::ballot(mask, wanted))
      break;
    port.send_n(wanted, wanted ? strlen(wanted) + 1 : 0);
  }
  port.close();
  return ret;
}

// A block of its own size for each lane, then its free; returns the address.
uint64_t malloc_free(Client &c, uint32_t warp, uint32_t lane) {
  uint64_t address = 0;
  {
    Client::Port port = c.open<RPC_MALLOC>();
    port.send_and_recv([&](rpc::Buffer *buffer) { buffer->data[0] = 16 + 8 * lane_key(warp, lane); },
                       [&](rpc::Buffer *buffer) { address = buffer->data[0]; });
    port.close();
  }
  // Every lane has its block before any is freed, so that the addresses are distinct.
  gpu::sync_lane(gpu::get_lane_mask());
  Client::Port port = c.open<RPC_FREE>();
  port.send([&](rpc::Buffer *buffer) { buffer->data[0] = address; });
  port.close();
  return address;
}

// LLVM 19's rpc_host_call with each lane's block (rpc_warp.h) after the address of a word of
// the lane's own: LLVM 19's host call brings no result back, so `function` leaves its result
// there, and the lane reads it once the call has returned.
uint64_t host_call(Client &c, uint32_t warp, uint32_t lane, uint64_t function) {
  uint64_t result = ~0ull;
  std::vector<uint8_t> lane_block = warp::host_call_block(warp, lane);
  std::vector<uint8_t> block(8 + lane_block.size());
  uint64_t where = reinterpret_cast<uintptr_t>(&result);
  memcpy(block.data(), &where, 8);
  memcpy(block.data() + 8, lane_block.data(), lane_block.size());
  Client::Port port = c.open<RPC_HOST_CALL>();
  port.send_n(block.data(), block.size());
  port.send([&](rpc::Buffer *buffer) { buffer->data[0] = function; });
  port.recv([](rpc::Buffer *) {});
  port.close();
  return __atomic_load_n(&result, __ATOMIC_ACQUIRE);
}

} // namespace

extern "C" {

// rpc_warp_client.cpp's rpc_warp_run in LLVM 19's protocol. ECHO's `seed` is the path prefix
// of the lanes' files (a C string); LLVM 19's libc has no test requests, so no INCREMENT.
void rpc_warp_run(void *c, uint32_t warps, uint32_t lanes, uint64_t active, int request,
                  uint64_t seed, uint64_t *results) {
  warp::run(warps, lanes, active, results, [=](uint32_t w, uint32_t l) -> uint64_t {
    Client &client = client_of(c);
    switch (request) {
    case warp::ECHO: return file_round_trip(client, w, l, reinterpret_cast<const char *>(seed));
    case warp::PRINTF: return print(client, w, l, seed);
    case warp::MALLOC_FREE: return malloc_free(client, w, l);
    case warp::HOST_CALL: return host_call(client, w, l, seed);
    default: return ~0ull;
    }
  });
}
}
