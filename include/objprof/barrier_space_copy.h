// BarrierSpaceCopy: a space's barrier fields copied into the VM's own structure, with the
// granule fixed at compile time.
//
// The barrier reads a space's BarrierDescriptor: its bounds, its active bitmap buffer and its
// granule. An interpreter reaches the descriptor through a pointer (one more load per access),
// and a granule read at run time is a variable shift. A VM whose objects all have one alignment
// known when it is compiled (Lua: 8 bytes) can keep a copy of the three fields next to the state
// its interpreter already holds in a register (Lua's global_State) and pass the copy to the
// barrier instead (access<Policy>(slot, copy, obj), barrier.h): the same marks, two loads fewer
// and immediate shifts (objprof-Lua's table and call barriers: docs/results.md).
//
// Contract: the bounds never change, but the active buffer does, at every harvest
// (Profiler::gc_begin swaps it). The VM copies the descriptor again (copy_from) right after each
// gc_begin, before its mutators resume, on every thread that holds a copy. A copy left stale
// marks the buffer being harvested, or an old one: those marks are lost (never wrong ones).
#pragma once

#include "objprof/barrier_descriptor.h"

#include <atomic>
#include <cstdint>

namespace objprof {

template <unsigned kLog2Granule>
struct BarrierSpaceCopy {
  static constexpr unsigned kLog2 = kLog2Granule;
  Address begin = 0;
  std::uint64_t size = 0;  // 0: the barrier marks nothing (the range check fails for every object)
  std::uint8_t* bitmap = nullptr;

  // Copies `space`; false (and the copy marks nothing) if its granule is not 2^kLog2Granule.
  bool copy_from(const BarrierDescriptor& space) noexcept {
    if (space.log2_granule != kLog2Granule) {
      *this = {};
      return false;
    }
    begin = space.begin;
    size = space.size;
    bitmap = space.bitmap.load(std::memory_order_acquire);
    return true;
  }
};

}  // namespace objprof
