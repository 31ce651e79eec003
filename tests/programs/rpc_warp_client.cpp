// LLVM 22's RPC client (libc/shared/rpc.h) in the form a GPU runs it: compiled here with the
// GPU path of rpc_util.h, whose lane primitives (`__gpu_ballot`, `__gpu_read_first_lane_u32`,
// ...) are given below by host threads, one per lane of a warp (rpc_warp.h). So the client
// takes one port per warp and fills one buffer per lane, with each lane's own sizes and data,
// as a warp of 32 (NVIDIA) or a wavefront of 64 (AMD) does; tests/tests/rpc.rs runs our server
// against it.
#include "rpc_warp.h"

// The lane primitives of clang's gpuintrin.h that rpc_util.h calls on a GPU.
inline uint32_t __gpu_num_lanes() { return warp::self.lanes; }
inline uint64_t __gpu_lane_mask() { return warp::self.active; }
inline uint32_t __gpu_lane_id() { return warp::self.id; }
inline bool __gpu_is_first_in_lane(uint64_t mask) { return warp::first(mask); }
inline void __gpu_sync_lane(uint64_t mask) { warp::meet(mask, 0); }
inline uint64_t __gpu_ballot(uint64_t mask, bool x) { return warp::ballot(mask, x); }
inline uint32_t __gpu_read_first_lane_u32(uint64_t mask, uint32_t x) {
  return warp::broadcast(mask, x);
}
// Lanes meet at rpc.h's fences (rpc_warp.h says why).
#define __scoped_atomic_thread_fence(order, scope) warp::fence(order)

#define RPC_TARGET_IS_GPU
#include "rpc.h"
#include "rpc_opcodes.h"
#include "Shared/RPCOpcodes.h"

using Client = rpc::Client;
using warp::lane_key;

namespace {

Client &client_of(void *bytes) { return *reinterpret_cast<Client *>(bytes); }

uint64_t increment(Client &c, uint32_t warp, uint32_t lane, uint64_t seed) {
  uint64_t value = (lane_key(warp, lane) << 32) | seed;
  Client::Port port = c.open<LIBC_TEST_INCREMENT>();
  port.send_and_recv([&](rpc::Buffer *buffer, uint32_t) { buffer->data[0] = value; },
                     [&](rpc::Buffer *buffer, uint32_t) { value = buffer->data[0]; });
  port.close();
  return value;
}

// The bytes that came back, or ~0 when they are not the bytes sent.
uint64_t echo(Client &c, uint32_t warp, uint32_t lane, uint64_t seed) {
  std::vector<uint8_t> data = warp::stream_bytes(warp, lane, seed);
  uint64_t size = data.size();
  std::vector<uint8_t> back(size + 1);
  Client::Port port = c.open<LIBC_TEST_STREAM>();
  port.send_n(data.data(), size);
  uint64_t got = 0;
  void *dst = nullptr;
  port.recv_n(&dst, &got, [&](uint64_t) { return static_cast<void *>(back.data()); });
  port.close();
  return got == size && memcmp(data.data(), back.data(), size) == 0 ? got : ~0ull;
}

// printf as LLVM's GPU libc sends it (vfprintf_utils.h), to the stream `stream`, each lane with
// its own arguments (rpc_warp.h). Returns the count the server answered.
uint64_t print(Client &c, uint32_t warp, uint32_t lane, uint64_t stream) {
  warp::PrintArguments args(warp, lane);
  uint64_t mask = rpc::get_lane_mask();
  Client::Port port = c.open<LIBC_PRINTF_TO_STREAM>();
  port.send([&](rpc::Buffer *buffer, uint32_t) { buffer->data[0] = stream; });
  uint64_t args_size = 0;
  port.send_n(warp::print_format, sizeof warp::print_format);
  port.recv([&](rpc::Buffer *buffer, uint32_t) { args_size = buffer->data[0]; });
  port.send_n(args.block, args_size > sizeof args.block ? sizeof args.block : args_size);
  uint32_t ret = 0;
  for (;;) {
    const char *wanted = nullptr;
    port.recv([&](rpc::Buffer *buffer, uint32_t) {
      ret = static_cast<uint32_t>(buffer->data[0]);
      wanted = reinterpret_cast<const char *>(buffer->data[1]);
    });
    if (!rpc::ballot(mask, wanted))
      break;
    port.send_n(wanted, wanted ? strlen(wanted) + 1 : 0);
  }
  port.close();
  return ret;
}

// A block of its own size for each lane, then its free; returns the address.
uint64_t malloc_free(Client &c, uint32_t warp, uint32_t lane, uint64_t) {
  uint64_t address = 0;
  {
    Client::Port port = c.open<LIBC_MALLOC>();
    port.send_and_recv(
        [&](rpc::Buffer *buffer, uint32_t) { buffer->data[0] = 16 + 8 * lane_key(warp, lane); },
        [&](rpc::Buffer *buffer, uint32_t) { address = buffer->data[0]; });
    port.close();
  }
  // Every lane has its block before any is freed, so that the addresses are distinct.
  rpc::sync_lane(rpc::get_lane_mask());
  Client::Port port = c.open<LIBC_FREE>();
  port.send([&](rpc::Buffer *buffer, uint32_t) { buffer->data[0] = address; });
  port.close();
  return address;
}

// __llvm_omp_host_call as LLVM 22's device runtime makes it, with each lane's block
// (rpc_warp.h); `function` is the host function, whose result comes back.
uint64_t host_call(Client &c, uint32_t warp, uint32_t lane, uint64_t function) {
  std::vector<uint8_t> block = warp::host_call_block(warp, lane);
  Client::Port port = c.open<OFFLOAD_HOST_CALL>();
  port.send_n(block.data(), block.size());
  port.send([&](rpc::Buffer *buffer, uint32_t) { buffer->data[0] = function; });
  uint64_t ret = 0;
  port.recv([&](rpc::Buffer *buffer, uint32_t) { ret = buffer->data[0]; });
  port.close();
  return ret;
}

} // namespace

extern "C" {

// Runs `request` on `warps` warps of `lanes` lanes, of which the lanes in `active` call, all at
// once on the client object `c`; each lane's answer goes to results[warp * lanes + lane].
// `seed` is the request's parameter (a stream, a host function, a number).
void rpc_warp_run(void *c, uint32_t warps, uint32_t lanes, uint64_t active, int request,
                  uint64_t seed, uint64_t *results) {
  warp::run(warps, lanes, active, results, [=](uint32_t w, uint32_t l) -> uint64_t {
    Client &client = client_of(c);
    switch (request) {
    case warp::INCREMENT: return increment(client, w, l, seed);
    case warp::ECHO: return echo(client, w, l, seed);
    case warp::PRINTF: return print(client, w, l, seed);
    case warp::MALLOC_FREE: return malloc_free(client, w, l, seed);
    default: return host_call(client, w, l, seed);
    }
  });
}
}
