// For programs whose x86-64 twin is the RPC client of a GPU image (LLVM 22's rpc.h), included
// before rpc.h. Built with TWIN_LANES, the twin's client addresses the mailbox as the GPU's
// does: rpc.h's GPU form, a warp of TWIN_LANES lanes (the GPU's: 64 for gfx90a, 32 for sm_90)
// of which the calling thread is the one active lane, so that its port's buffer is where the
// server, told the GPU's lanes, reads it. Each host thread of a twin kernel is then a warp of
// its own, on a port of its own.
#pragma once

#if defined(TWIN_LANES) && !defined(__AMDGPU__) && !defined(__NVPTX__)
#include <stdint.h>
inline uint32_t __gpu_num_lanes() { return TWIN_LANES; }
inline uint64_t __gpu_lane_mask() { return 1; }
inline uint32_t __gpu_lane_id() { return 0; }
inline bool __gpu_is_first_in_lane(uint64_t) { return true; }
inline void __gpu_sync_lane(uint64_t) {}
inline uint64_t __gpu_ballot(uint64_t, bool x) { return x; }
inline uint32_t __gpu_read_first_lane_u32(uint64_t, uint32_t x) { return x; }
#define RPC_TARGET_IS_GPU
#endif
