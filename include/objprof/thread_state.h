// ThreadState: the per-mutator-thread part of objprof. It holds the last-accessed-object
// cache the barrier consults first, the optional barrier counters, the thread's allocation
// clock and its trace buffer. The embedder gets one from Profiler::attach_thread and passes it
// to every barrier and on_alloc of that thread (as ART passes Thread* in x19).
//
// Only the owning thread writes the cache and counters; the collector resets the cache at
// gc_end. All fields are relaxed atomics so that reset is well defined, and relaxed atomic
// loads and stores compile to plain moves on x86_64 and arm64.
#pragma once

#include "objprof/config.h"
#include "objprof/event_buffer.h"
#include "objprof/heap_space.h"
#include "objprof/pending_marks.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace objprof {



namespace internal {
// The stale tracker's record of one tracked object (16 bytes). on_alloc writes it directly for
// the usual single space, so gc_begin appends a thread's new objects with one copy.
struct TrackedRecord {
  std::uint32_t granule;      // offset in its space, in granules
  std::uint32_t site_type;    // interned (site, type, owner clock)
  std::uint32_t size_flags;   // size in granules (31 bits) | reported flag (bit 31)
  std::uint32_t last_access;  // last epoch with an access (birth counts as one)
};
static_assert(sizeof(TrackedRecord) == 16, "the tracker promises 16 bytes per tracked object");
// A tracked (size >= threshold) allocation waiting to be merged into the stale tracker at the
// next gc_begin, when there are several spaces (one space: a TrackedRecord). Kept on the
// allocating thread so on_alloc takes no lock.
struct PendingTracked {
  Address addr;
  std::uint32_t site_type;  // interned (site, type) pair
  std::uint32_t size_granules;
  std::uint32_t birth_epoch;
};
// A footprint change (Profiler::on_resize) of at least the tracking threshold, applied to the
// stale tracker at the next gc_begin (the object may have been allocated this epoch).
struct PendingResize {
  Address addr;
  std::uint32_t site_type;  // used if the object is not tracked yet
  std::uint32_t size_granules;
  std::uint32_t epoch;
};
// Profiler-private: the allocating thread's recent (site, type) -> interned-pair lookups, so
// on_alloc of a tracked object consults the shared hash map only the first time this thread
// allocates a given pair (direct-mapped; a collision just costs a hash-map lookup).
struct PairCache {
  static constexpr std::size_t kSlots = 64;
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};
  std::uint64_t keys[kSlots];
  std::uint32_t pairs[kSlots];
  PairCache() noexcept {
    for (auto& k : keys) k = kEmpty;
  }
  static std::size_t slot(std::uint64_t key) noexcept { return (key * 0x9E3779B97F4A7C15ull) >> 58; }
};
}  // namespace internal

struct BarrierCounters {
  std::atomic<std::uint64_t> executed{0};    // barriers reached (any object, in range or not)
  std::atomic<std::uint64_t> cache_hits{0};  // skipped because obj == cache
  std::atomic<std::uint64_t> marks{0};       // bitmap marks performed
};

// Owner-thread increment of a relaxed counter: no locked instruction.
OBJPROF_ALWAYS_INLINE void bump(std::atomic<std::uint64_t>& c, std::uint64_t by = 1) noexcept {
  c.store(c.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}

class alignas(kCacheLine) ThreadState {
 public:
  ThreadState(std::uint32_t id, std::string name) : id_(id), name_(std::move(name)) {}
  ~ThreadState();
  ThreadState(const ThreadState&) = delete;
  ThreadState& operator=(const ThreadState&) = delete;

  // The last-accessed-object cache. 0 (null) means empty: null is never in a space.
  std::atomic<Address> cache{0};
  BarrierCounters counters;
  // MarkMode::kBuffered's bits not yet in the bitmap (in the cache's line); the profiler
  // merges them at gc_begin and detach_thread.
  PendingMarks pending_marks;

  std::uint32_t id() const noexcept { return id_; }
  const std::string& name() const noexcept { return name_; }

  void reset_cache() noexcept { cache.store(0, std::memory_order_relaxed); }

  // Bytes this thread allocated so far (the thesis' clock, summed over threads at each GC).
  std::atomic<std::uint64_t> allocated_bytes{0};
  std::atomic<std::uint64_t> allocated_objects{0};

  // Trace buffer of this thread's events; null when the profiler writes no trace.
  EventBuffer* buffer() noexcept { return buffer_.get(); }
  void set_buffer(std::unique_ptr<EventBuffer> buffer) noexcept;

  // Profiler-private: tracked allocations since the last GC (owner thread appends).
  std::vector<internal::PendingTracked>& pending_tracked() noexcept { return pending_tracked_; }
  std::vector<internal::TrackedRecord>& pending_records() noexcept { return pending_records_; }
  std::vector<internal::PendingResize>& pending_resizes() noexcept { return pending_resizes_; }
  // Profiler-private: how many of pending_records() (a prefix: those allocated inside a GC
  // bracket) still need their start bits claimed at the next gc_begin.
  std::size_t& unclaimed_records() noexcept { return unclaimed_records_; }
  // Profiler-private: whether pending_records() rise in address order, as a bump allocator's
  // do (a copying GC then finds a run's young records in them by binary search). The granule
  // the next record must start at or above, or kRecordsFell once one did not; reset to 0 when
  // the records change hands at gc_begin.
  static constexpr std::uint64_t kRecordsFell = ~std::uint64_t{0};
  std::uint64_t& next_rising_granule() noexcept { return next_rising_granule_; }
  internal::PairCache& pair_cache() noexcept { return pair_cache_; }
  // Profiler-private: this thread's progress clock (the stale check's second condition).
  std::uint32_t clock_slot() const noexcept { return clock_slot_; }
  void set_clock_slot(std::uint32_t slot) noexcept { clock_slot_ = slot; }

 private:
  std::uint32_t id_;
  std::string name_;
  std::unique_ptr<EventBuffer> buffer_;
  std::vector<internal::PendingTracked> pending_tracked_;
  std::vector<internal::TrackedRecord> pending_records_;  // the only space's, ready for the tracker
  std::vector<internal::PendingResize> pending_resizes_;
  std::size_t unclaimed_records_ = 0;
  std::uint64_t next_rising_granule_ = 0;
  internal::PairCache pair_cache_;
  std::uint32_t clock_slot_ = 0;
};

// Offset of the cache slot for code generators: arm64 `ldr x16, [x19, #offset]` (seed 001
// uses [tr, #2440] inside ART's Thread; ours is at the start of ThreadState).
inline constexpr std::size_t kThreadCacheOffset = 0;

}  // namespace objprof
