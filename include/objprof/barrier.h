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
//   kMark     - MarkMode::kRacy / kRacyTestFirst / kAtomic / kAtomicTestFirst / kBuffered
//               (the last keeps pending bits in the thread: ThreadState only)
//   kCount    - maintain BarrierCounters (for benchmarks and the demo summary)
//
// Where the cache lives: objprof's ThreadState by default (access(thread, space, obj)), or the
// VM's own per-thread struct (ART's Thread, Lua's lua_State), which embeds a BarrierSlot next to
// the state its interpreter and JIT already reach (access(slot, space, obj)); emitted code then
// addresses it as [thread register + offsetof(VmThread, slot)] (docs/backends.md). Every
// overload inlines the one barrier, internal::access, so where the cache lives costs nothing.
#pragma once

#include "objprof/access_bitmap.h"
#include "objprof/barrier_descriptor.h"
#include "objprof/barrier_space_copy.h"
#include "objprof/config.h"
#include "objprof/thread_state.h"

#include <atomic>
#include <type_traits>

namespace objprof {

// Compare = false (with Cache): the barrier stores the cache when it marks but never compares
// with it, so it never skips. A code generator that decides per site whether the cache pays
// (sim/cache_plan.h) uses it where a site's own hits are too rare to pay for the compare but
// later sites find its object in the cache.
template <bool Cache, MarkMode Mark, bool Count = false, bool Compare = true>
struct BarrierPolicy {
  static constexpr bool kCache = Cache;
  static constexpr MarkMode kMark = Mark;
  static constexpr bool kCount = Count;
  static constexpr bool kCompare = Cache && Compare;
};

using DefaultBarrier = BarrierPolicy<true, MarkMode::kRacy>;
using CountingBarrier = BarrierPolicy<true, MarkMode::kRacy, true>;

// The last-accessed-object cache as a VM embeds it in its own per-thread struct: one 8-byte
// word (0 = empty; null is never in a space), standard layout, so its place in the VM's struct
// is a plain offsetof that emitted code can use. Only the owning thread accesses it, with
// relaxed atomics (plain moves on x86_64 and arm64).
// Contract: the profiler does not know the VM's slots, so the VM resets each one (reset())
// where the profiler resets ThreadState caches, at gc_begin (the bitmap was cleared) and at
// gc_end (objects moved); a collector whose mutators stay stopped between the two may reset once,
// when gc_end returns. A stale cache would hide the first access of the new epoch. Counting
// policies also need a BarrierCounters, kept wherever the VM likes
// (access<Policy>(slot.cache, counters, space, obj)).
struct BarrierSlot {
  std::atomic<Address> cache{0};
  void reset() noexcept { cache.store(0, std::memory_order_relaxed); }
};
static_assert(std::is_standard_layout_v<BarrierSlot> && sizeof(BarrierSlot) == 8 && alignof(BarrierSlot) == 8,
              "emitted code accesses BarrierSlot::cache as one aligned 64-bit word");
static_assert(std::atomic<Address>::is_always_lock_free);

namespace internal {
// The cache and counters of one call when they are not a ThreadState's: the VM's own fields.
struct CacheAndCounters {
  std::atomic<Address>& cache;
  BarrierCounters& counters;
};

// A space as the barrier reads it: the descriptor (its active buffer an atomic word, its granule
// read at run time) or the VM's copy of it (the granule a constant).
inline std::uint8_t* active_bitmap(const BarrierDescriptor& space) noexcept {
  return space.bitmap.load(std::memory_order_relaxed);
}
inline std::uint32_t granule_shift(const BarrierDescriptor& space) noexcept { return space.log2_granule; }
template <unsigned kLog2>
std::uint8_t* active_bitmap(const BarrierSpaceCopy<kLog2>& space) noexcept {
  return space.bitmap;
}
template <unsigned kLog2>
constexpr std::uint32_t granule_shift(const BarrierSpaceCopy<kLog2>&) noexcept {
  return kLog2;
}

// The barrier proper, on anything with a `cache` (a ThreadState, a BarrierSlot, a
// CacheAndCounters) and, for counting policies, `counters`. Every public overload passes its
// argument itself, so the ThreadState barrier compiles exactly as it did before the others
// existed (forwarding the cache and counters separately made clang merge the two counter
// increments into one with a computed address: one instruction more on a counting hit).
template <class Policy, class Thread, class Space>
OBJPROF_ALWAYS_INLINE void access(Thread& thread, const Space& space, Address obj) noexcept {
  if constexpr (Policy::kCount) bump(thread.counters.executed);
  if constexpr (Policy::kCache && Policy::kCompare) {
    // Hits are the common case: keep them on the fall-through path.
    if (OBJPROF_LIKELY(obj == thread.cache.load(std::memory_order_relaxed))) {
      if constexpr (Policy::kCount) bump(thread.counters.cache_hits);
      return;
    }
  }
  const Address offset = obj - space.begin;
  if (OBJPROF_UNLIKELY(offset >= space.size)) return;  // out of range, or null
  if constexpr (Policy::kCache) thread.cache.store(obj, std::memory_order_relaxed);
  if constexpr (Policy::kMark == MarkMode::kBuffered && requires { thread.pending_marks; }) {
    thread.pending_marks.mark(active_bitmap(space), offset >> granule_shift(space));
  } else if constexpr (Policy::kMark == MarkMode::kBuffered) {
    // No PendingMarks next to this cache (a VM's BarrierSlot): the same bits, lost by none,
    // with a test-first fetch-or.
    AccessBitmap::mark_granule<MarkMode::kAtomicTestFirst>(active_bitmap(space), offset >> granule_shift(space));
  } else {
    AccessBitmap::mark_granule<Policy::kMark>(active_bitmap(space), offset >> granule_shift(space));
  }
  if constexpr (Policy::kCount) bump(thread.counters.marks);
}
}  // namespace internal

// Records an access to `obj` (the address of the object's first byte; 0 for null), with the
// cache and counters in objprof's ThreadState.
template <class Policy = DefaultBarrier>
OBJPROF_ALWAYS_INLINE void access(ThreadState& thread, const BarrierDescriptor& space, Address obj) noexcept {
  internal::access<Policy>(thread, space, obj);
}

template <class Policy = DefaultBarrier>
OBJPROF_ALWAYS_INLINE void access(ThreadState& thread, AccessBitmap& bitmap, Address obj) noexcept {
  access<Policy>(thread, bitmap.descriptor(), obj);
}

// The same barrier with the cache in the VM's own thread struct (BarrierSlot) ...
template <class Policy = DefaultBarrier>
OBJPROF_ALWAYS_INLINE void access(BarrierSlot& slot, const BarrierDescriptor& space, Address obj) noexcept {
  static_assert(!Policy::kCount, "a counting policy needs counters: access<Policy>(slot.cache, counters, space, obj)");
  internal::access<Policy>(slot, space, obj);
}

// ... or in any cache word, with the counters a counting policy maintains.
template <class Policy = DefaultBarrier>
OBJPROF_ALWAYS_INLINE void access(std::atomic<Address>& cache, BarrierCounters& counters, const BarrierDescriptor& space,
                                  Address obj) noexcept {
  internal::CacheAndCounters fields{cache, counters};
  internal::access<Policy>(fields, space, obj);
}

// ... or with no cache at all, for a policy without one: every access sets its bit, so there is
// nothing to keep between accesses (a VM whose code alternates between objects may measure this
// cheaper than a cache whose compare mispredicts: docs/embedding.md, section 4).
template <class Policy>
OBJPROF_ALWAYS_INLINE void access(const BarrierDescriptor& space, Address obj) noexcept {
  static_assert(!Policy::kCache && !Policy::kCount, "a cached or counting policy needs a cache: access<Policy>(slot, space, obj)");
  struct NoCache {} none;  // the barrier reads no member of it without kCache or kCount
  internal::access<Policy>(none, space, obj);
}

// The same barriers on the VM's copy of the space (barrier_space_copy.h): with the cache in a
// BarrierSlot, or with none.
template <class Policy = DefaultBarrier, unsigned kLog2>
OBJPROF_ALWAYS_INLINE void access(BarrierSlot& slot, const BarrierSpaceCopy<kLog2>& space, Address obj) noexcept {
  static_assert(!Policy::kCount, "a counting policy needs counters");
  internal::access<Policy>(slot, space, obj);
}
template <class Policy, unsigned kLog2>
OBJPROF_ALWAYS_INLINE void access(const BarrierSpaceCopy<kLog2>& space, Address obj) noexcept {
  static_assert(!Policy::kCache && !Policy::kCount, "a cached or counting policy needs a cache: access<Policy>(slot, space, obj)");
  struct NoCache {} none;
  internal::access<Policy>(none, space, obj);
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
      case MarkMode::kBuffered: return fn(BarrierPolicy<C, MarkMode::kBuffered, N>{});
      case MarkMode::kRacyTestFirst: return fn(BarrierPolicy<C, MarkMode::kRacyTestFirst, N>{});
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
