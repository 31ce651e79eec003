// A GPU warp played by host threads, for LLVM's RPC clients compiled in their GPU form
// (rpc_warp_client.cpp: LLVM 22's rpc.h; rpc_warp_client_19.cpp: LLVM 19's): each lane of a
// warp is a thread of its own, and the lane primitives the client calls (ballot, broadcast,
// sync) are meetings of the warp's active lanes. Lanes outside a warp's active mask do not
// call, as on a GPU where only some threads reach the call.
#pragma once

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

inline thread_local Lane self;

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

// Each lane's bit where it brings true.
inline uint64_t ballot(uint64_t mask, bool x) { return meet(mask, x ? 1ull << self.id : 0); }

// The first lane's `x`, to every lane.
inline uint32_t broadcast(uint64_t mask, uint32_t x) {
  return static_cast<uint32_t>(meet(mask, first(mask) ? x : 0));
}

// A warp executes each instruction in all its lanes together: every lane has written its
// packet before the one store that hands the port over, and reads only after the load that
// took it back. Threads do not keep such step, so each fence of rpc.h (the release before
// the outbox store, the acquire after ownership returns, and those of the port lock) is also
// where the lanes meet. Every active lane passes each of these fences: rpc.h keeps them
// convergent.
inline void fence(int order) {
  meet(self.active, 0);
  __atomic_thread_fence(order);
}

// Runs `answer(warp, lane)` on `warps` warps of `lanes` lanes, of which the lanes in `active`
// call, all at once, a thread per lane; each lane's answer goes to results[warp * lanes + lane].
template <typename Answer>
void run(uint32_t warps, uint32_t lanes, uint64_t active, uint64_t *results, Answer answer) {
  std::vector<Meeting> meetings(warps);
  std::vector<std::thread> threads;
  for (uint32_t w = 0; w < warps; ++w)
    for (uint32_t l = 0; l < lanes; ++l) {
      if (!(active >> l & 1))
        continue;
      threads.emplace_back([=, &meetings] {
        self = {&meetings[w], l, lanes, active};
        results[w * lanes + l] = answer(w, l);
      });
    }
  for (std::thread &t : threads)
    t.join();
}

// What the lanes ask for, by number (tests/tests/rpc.rs numbers them alike); each client
// program makes each request as its release's libc does.
enum Request : int { INCREMENT, ECHO, PRINTF, MALLOC_FREE, HOST_CALL };

// Each lane's own numbers, so that a mixed-up lane shows.
inline uint64_t lane_key(uint32_t warp, uint32_t lane) { return (uint64_t(warp) << 8) | lane; }

// The size of the bytes each lane sends, from 0 to several packets.
inline uint64_t stream_size(uint32_t warp, uint32_t lane, uint64_t seed) {
  return (lane * 37 + warp * 11 + seed) % 300;
}

// The bytes each lane sends.
inline std::vector<uint8_t> stream_bytes(uint32_t warp, uint32_t lane, uint64_t seed) {
  std::vector<uint8_t> data(stream_size(warp, lane, seed));
  for (uint64_t i = 0; i < data.size(); ++i)
    data[i] = static_cast<uint8_t>(i * 7 + lane_key(warp, lane));
  return data;
}

// printf's format and arguments for each lane: "warp W lane L: <L x's>|-K\n" with
// K = W * 1000 + L, a `%s` of the lane's own length (lanes divisible by 5 pass a null string),
// the argument block laid out as NVPTX lays out a va_list (each argument at its alignment).
inline constexpr char print_format[] = "warp %u lane %u: %s|%d\n";

struct PrintArguments {
  std::string text;
  uint8_t block[24] = {};

  PrintArguments(uint32_t warp, uint32_t lane) : text(lane, 'x') {
    const char *str = lane % 5 == 0 ? nullptr : text.c_str();
    int32_t k = -static_cast<int32_t>(warp * 1000 + lane);
    uint64_t p = reinterpret_cast<uintptr_t>(str);
    memcpy(block, &warp, 4);
    memcpy(block + 4, &lane, 4);
    memcpy(block + 8, &p, 8);
    memcpy(block + 16, &k, 4);
  }
  PrintArguments(const PrintArguments &) = delete; // the block points into `text`
};

// A host call's block for each lane: its length, then that many bytes of its own.
inline std::vector<uint8_t> host_call_block(uint32_t warp, uint32_t lane) {
  uint64_t count = lane_key(warp, lane) % 97;
  std::vector<uint8_t> block(8 + count);
  memcpy(block.data(), &count, 8);
  for (uint64_t i = 0; i < count; ++i)
    block[8 + i] = static_cast<uint8_t>(i + lane);
  return block;
}

} // namespace warp
