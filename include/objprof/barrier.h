// The access barrier: what a mutator runs before it touches an object.
//
//   if (obj != thread.cache && space.begin <= obj < space.end) {
//     thread.cache = obj;
//     bitmap[(obj - begin) >> (log2 K + 3)] |= 1 << (((obj - begin) >> log2 K) & 7);
//   }
//
// The seeds check the range first; we compare with the cache first because hits are the
// common case and then cost one compare. Both orders mark the same bits and leave the same
// cache: the cache only ever holds 0 or an in-range object, and 0 is never in range. They
// differ only in the optional counters: null with an empty cache counts as a cache hit here
// and as an out-of-range object in the seeds' order (so backends/ refuses that order together
// with counters).
//
// Policies are template parameters (cppgc style), so a disabled feature costs nothing:
//   kCache    - consult and update the last-accessed-object cache
//   kMark     - MarkMode::kRacy / kAtomic / kAtomicTestFirst
//   kCount    - maintain ThreadState::counters (for benchmarks and the demo summary)
#pragma once

#include "objprof/access_bitmap.h"
#include "objprof/barrier_descriptor.h"
#include "objprof/config.h"
#include "objprof/thread_state.h"

namespace objprof {

template <bool Cache, MarkMode Mark, bool Count = false>
struct BarrierPolicy {
  static constexpr bool kCache = Cache;
  static constexpr MarkMode kMark = Mark;
  static constexpr bool kCount = Count;
};

using DefaultBarrier = BarrierPolicy<true, MarkMode::kRacy>;
using CountingBarrier = BarrierPolicy<true, MarkMode::kRacy, true>;

// Records an access to `obj` (the address of the object's first byte; 0 for null).
template <class Policy = DefaultBarrier>
OBJPROF_ALWAYS_INLINE void access(ThreadState& thread, const BarrierDescriptor& space, Address obj) noexcept {
  if constexpr (Policy::kCount) bump(thread.counters.executed);
  if constexpr (Policy::kCache) {
    // Hits are the common case: keep them on the fall-through path.
    if (OBJPROF_LIKELY(obj == thread.cache.load(std::memory_order_relaxed))) {
      if constexpr (Policy::kCount) bump(thread.counters.cache_hits);
      return;
    }
  }
  const Address offset = obj - space.begin;
  if (OBJPROF_UNLIKELY(offset >= space.size)) return;  // out of range, or null
  if constexpr (Policy::kCache) thread.cache.store(obj, std::memory_order_relaxed);
  AccessBitmap::mark_granule<Policy::kMark>(space.bitmap.load(std::memory_order_relaxed),
                                            offset >> space.log2_granule);
  if constexpr (Policy::kCount) bump(thread.counters.marks);
}

template <class Policy = DefaultBarrier>
OBJPROF_ALWAYS_INLINE void access(ThreadState& thread, AccessBitmap& bitmap, Address obj) noexcept {
  access<Policy>(thread, bitmap.descriptor(), obj);
}

// Dispatch helper for tools that pick the variant at run time (the sim's --barrier option).
struct BarrierConfig {
  bool cache = true;
  MarkMode mark = MarkMode::kRacy;
  bool count = true;
};

template <class Fn>
decltype(auto) with_barrier_policy(const BarrierConfig& c, Fn&& fn) {
  auto by_mark = [&]<bool C, bool N>() -> decltype(auto) {
    switch (c.mark) {
      case MarkMode::kAtomic: return fn(BarrierPolicy<C, MarkMode::kAtomic, N>{});
      case MarkMode::kAtomicTestFirst: return fn(BarrierPolicy<C, MarkMode::kAtomicTestFirst, N>{});
      case MarkMode::kRacy: break;
    }
    return fn(BarrierPolicy<C, MarkMode::kRacy, N>{});
  };
  if (c.cache) {
    return c.count ? by_mark.template operator()<true, true>() : by_mark.template operator()<true, false>();
  }
  return c.count ? by_mark.template operator()<false, true>() : by_mark.template operator()<false, false>();
}

}  // namespace objprof
