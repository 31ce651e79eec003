// LLVM 22's RPC client (libc/shared/rpc.h) in the form a GPU runs it: compiled here with the
// GPU path of rpc_util.h, whose lane primitives (`__gpu_ballot`, `__gpu_read_first_lane_u32`,
// ...) are given below by host threads, one per lane of a warp, meeting at a barrier for each.
// So the client takes one port per warp and fills one buffer per lane, with each lane's own
// sizes and data, as a warp of 32 (NVIDIA) or a wavefront of 64 (AMD) does; tests/tests/rpc.rs
// runs our server against it. Lanes outside a warp's active mask do not call, as on a GPU where
// only some threads reach the call.
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace warp {

// One warp: the lanes of its active mask meet here. Each meeting ORs what every lane brings
// and hands the result to all of them.
struct Meeting {
  std::mutex lock;
  std::condition_variable met;
  uint32_t arrived = 0;
  uint64_t round = 0;
  uint64_t gathered = 0;
  uint64_t result = 0;
};

struct Lane {
  Meeting *meeting;
  uint32_t id;
  uint32_t lanes;
  uint64_t active;
};

thread_local Lane self;

// Every lane of `mask` brings `value`; all get the OR of them.
inline uint64_t meet(uint64_t mask, uint64_t value) {
  Meeting &m = *self.meeting;
  std::unique_lock<std::mutex> hold(m.lock);
  uint64_t round = m.round;
  m.gathered |= value;
  if (++m.arrived == static_cast<uint32_t>(__builtin_popcountll(mask))) {
    m.result = m.gathered;
    m.gathered = 0;
    m.arrived = 0;
    ++m.round;
    m.met.notify_all();
    return m.result;
  }
  m.met.wait(hold, [&] { return m.round != round; });
  return m.result;
}

inline bool first(uint64_t mask) { return self.id == static_cast<uint32_t>(__builtin_ctzll(mask)); }

} // namespace warp

// The lane primitives of clang's gpuintrin.h that rpc_util.h calls on a GPU.
inline uint32_t __gpu_num_lanes() { return warp::self.lanes; }
inline uint64_t __gpu_lane_mask() { return warp::self.active; }
inline uint32_t __gpu_lane_id() { return warp::self.id; }
inline bool __gpu_is_first_in_lane(uint64_t mask) { return warp::first(mask); }
inline void __gpu_sync_lane(uint64_t mask) { warp::meet(mask, 0); }
inline uint64_t __gpu_ballot(uint64_t mask, bool x) {
  return warp::meet(mask, x ? 1ull << warp::self.id : 0);
}
inline uint32_t __gpu_read_first_lane_u32(uint64_t mask, uint32_t x) {
  return static_cast<uint32_t>(warp::meet(mask, warp::first(mask) ? x : 0));
}

// A warp executes each instruction in all its lanes together: every lane has written its
// packet before the one store that hands the port over, and reads only after the load that
// took it back. Threads do not keep such step, so each fence of rpc.h (the release before
// the outbox store, the acquire after ownership returns, and those of the port lock) is also
// where the lanes meet. Every active lane passes each of these fences: rpc.h keeps them
// convergent.
inline void warp_fence(int order) {
  warp::meet(warp::self.active, 0);
  __atomic_thread_fence(order);
}
#define __scoped_atomic_thread_fence(order, scope) warp_fence(order)

#define RPC_TARGET_IS_GPU
#include "rpc.h"
#include "rpc_opcodes.h"
#include "Shared/RPCOpcodes.h"

using Client = rpc::Client;

namespace {

// What a lane asks for and what it got back.
enum Request : int { INCREMENT, ECHO, PRINTF, MALLOC_FREE, HOST_CALL };

Client &client_of(void *bytes) { return *reinterpret_cast<Client *>(bytes); }

// Each lane's own numbers, so that a mixed-up lane shows.
uint64_t lane_key(uint32_t warp, uint32_t lane) { return (uint64_t(warp) << 8) | lane; }
uint64_t echo_size(uint32_t warp, uint32_t lane, uint64_t seed) {
  return (lane * 37 + warp * 11 + seed) % 300;
}

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
  uint64_t size = echo_size(warp, lane, seed);
  std::vector<uint8_t> data(size), back(size + 1);
  for (uint64_t i = 0; i < size; ++i)
    data[i] = static_cast<uint8_t>(i * 7 + lane_key(warp, lane));
  Client::Port port = c.open<LIBC_TEST_STREAM>();
  port.send_n(data.data(), size);
  uint64_t got = 0;
  void *dst = nullptr;
  port.recv_n(&dst, &got, [&](uint64_t) { return static_cast<void *>(back.data()); });
  port.close();
  return got == size && memcmp(data.data(), back.data(), size) == 0 ? got : ~0ull;
}

// printf as LLVM's GPU libc sends it (vfprintf_utils.h), to the stream `seed`, each lane with
// its own numbers and a `%s` of its own length (lanes divisible by 5 pass a null string):
// "warp W lane L: <L x's>|-K\n" with K = W * 1000 + L. Returns the count the server answered.
uint64_t print(Client &c, uint32_t warp, uint32_t lane, uint64_t stream) {
  static const char format[] = "warp %u lane %u: %s|%d\n";
  std::string text(lane, 'x');
  const char *str = lane % 5 == 0 ? nullptr : text.c_str();
  // The argument block as NVPTX lays out a va_list: each argument at its alignment.
  uint8_t args[24] = {};
  uint32_t w = warp, l = lane;
  int32_t k = -static_cast<int32_t>(warp * 1000 + lane);
  uint64_t p = reinterpret_cast<uintptr_t>(str);
  memcpy(args, &w, 4);
  memcpy(args + 4, &l, 4);
  memcpy(args + 8, &p, 8);
  memcpy(args + 16, &k, 4);
  uint64_t mask = rpc::get_lane_mask();
  Client::Port port = c.open<LIBC_PRINTF_TO_STREAM>();
  port.send([&](rpc::Buffer *buffer, uint32_t) { buffer->data[0] = stream; });
  uint64_t args_size = 0;
  port.send_n(format, sizeof format);
  port.recv([&](rpc::Buffer *buffer, uint32_t) { args_size = buffer->data[0]; });
  port.send_n(args, args_size > sizeof args ? sizeof args : args_size);
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

// __llvm_omp_host_call as LLVM 22's device runtime makes it, with each lane's block: its
// length, then that many bytes; `seed` is the host function.
uint64_t host_call(Client &c, uint32_t warp, uint32_t lane, uint64_t function) {
  uint64_t count = lane_key(warp, lane) % 97;
  std::vector<uint8_t> block(8 + count);
  memcpy(block.data(), &count, 8);
  for (uint64_t i = 0; i < count; ++i)
    block[8 + i] = static_cast<uint8_t>(i + lane);
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
  std::vector<warp::Meeting> meetings(warps);
  std::vector<std::thread> threads;
  for (uint32_t w = 0; w < warps; ++w)
    for (uint32_t l = 0; l < lanes; ++l) {
      if (!(active >> l & 1))
        continue;
      threads.emplace_back([=, &meetings] {
        warp::self = {&meetings[w], l, lanes, active};
        Client &client = client_of(c);
        uint64_t answer = 0;
        switch (request) {
        case INCREMENT: answer = increment(client, w, l, seed); break;
        case ECHO: answer = echo(client, w, l, seed); break;
        case PRINTF: answer = print(client, w, l, seed); break;
        case MALLOC_FREE: answer = malloc_free(client, w, l, seed); break;
        default: answer = host_call(client, w, l, seed); break;
        }
        results[w * lanes + l] = answer;
      });
    }
  for (std::thread &t : threads)
    t.join();
}
}
