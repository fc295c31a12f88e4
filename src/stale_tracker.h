// StaleTracker (private): the online leak detector's table. One table per space, each a
// vector of 16-byte records in no particular order, so the profiler keeps 16 bytes per tracked
// object beyond the bitmap. Updates from the hooks are logged and applied in bulk at GC:
// new objects are appended at gc_begin, the epoch's access bits applied to every record, and
// at gc_end one open-addressing index (granule -> record, 8 bytes per slot, at most half full,
// so 16 bytes per tracked object that live only while gc_end runs) resolves the GC's deaths
// and moves in O(records + events): no sort, no binary search per event, which keeps the
// profiler's share of a GC small (bench/bench_sim_gc.cc).
#pragma once

#include "objprof/access_bitmap.h"
#include "objprof/heap_space.h"
#include "objprof/thread_state.h"

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

namespace objprof::internal {

struct TrackedRecord {
  std::uint32_t granule;      // offset in its space, in granules
  std::uint32_t site_type;    // interned (site, type, owner clock)
  std::uint32_t size_flags;   // size in granules (31 bits) | reported flag (bit 31)
  std::uint32_t last_access;  // last epoch with an access (birth counts as one)
};
static_assert(sizeof(TrackedRecord) == 16, "the tracker promises 16 bytes per tracked object");

struct MoveLog { Address from, to; };
struct RangeMoveLog { Address from, to; std::uint64_t bytes; };
struct FreeRangeLog { Address from; std::uint64_t bytes; };

// Appends the per-collector-thread logs (anything with moves, ranges, frees and free_ranges
// vectors of these types) to one set of vectors and empties them, keeping their capacity for
// the next GC.
template <class Locals>
void gather_collector_logs(Locals& locals, std::vector<MoveLog>& moves, std::vector<RangeMoveLog>& ranges,
                           std::vector<Address>& frees, std::vector<FreeRangeLog>& free_ranges) {
  for (auto& local : locals) {
    moves.insert(moves.end(), local.moves.begin(), local.moves.end());
    ranges.insert(ranges.end(), local.ranges.begin(), local.ranges.end());
    frees.insert(frees.end(), local.frees.begin(), local.frees.end());
    free_ranges.insert(free_ranges.end(), local.free_ranges.begin(), local.free_ranges.end());
    local.moves.clear();
    local.ranges.clear();
    local.frees.clear();
    local.free_ranges.clear();
  }
}

class StaleTracker {
 public:
  static constexpr std::uint32_t kReported = 0x8000'0000u;
  static constexpr std::uint32_t kSizeMask = 0x7FFF'FFFFu;
  static constexpr std::uint32_t kDead = 0xFFFF'FFFFu;

  StaleTracker() = default;
  StaleTracker(const StaleTracker&) = delete;
  StaleTracker& operator=(const StaleTracker&) = delete;
  ~StaleTracker();

  void set_spaces(std::vector<HeapSpace> spaces);
  // Largest granule index a record can hold; spaces above it are rejected at add_space.
  static constexpr std::uint64_t kMaxGranules = 0xFFFF'FFFFull;
  // Region filter geometry: 512-byte regions, at most 2^24 regions (2 MiB of bits) per space.
  static constexpr unsigned kMinRegionShift = 9;
  static constexpr std::uint64_t kMaxRegions = std::uint64_t{1} << 24;

  // Adds the epoch's new objects (at gc_begin, before build_filter) and returns how many are
  // tracked: an object in no space is not.
  std::uint64_t add(std::span<const PendingTracked> objects);
  // Applies the epoch's footprint changes (at gc_begin, after add): a tracked object takes its
  // new size; an untracked one is tracked from now on, with the resize's site, type and epoch
  // as its birth. Returns how many objects started being tracked.
  std::uint64_t resize(std::span<const PendingResize> resizes);
  // last_access = epoch for every record whose granule is marked in `bits` (space index i).
  void apply_bits(std::size_t space, const BitmapSnapshot& bits, std::uint32_t epoch);
  struct ApplyResult { std::uint64_t freed = 0, moved = 0, left_spaces = 0, conflicts = 0; };
  // Applies one GC's deaths and moves, looked up at their pre-GC addresses. Two live records
  // at one granule mean the runtime reused memory without reporting a free (or moved two
  // objects to one place): the one added or moved there later is kept, and it is counted
  // as a conflict (at the GC that finds it).
  ApplyResult apply(std::span<const MoveLog> moves, std::span<const RangeMoveLog> ranges,
                    std::span<const Address> frees, std::span<const FreeRangeLog> free_ranges);

  // The region filter: one bit per region of each space (512 bytes, coarser for spaces over
  // 8 GiB so a filter stays at most 2 MiB), set where a record starts. Built at gc_begin, after
  // the epoch's adds, from the records at their pre-GC addresses; the GC's moves and frees are
  // reported at pre-GC addresses too, so an event whose region bit is clear concerns no record
  // and the collector hooks drop it with one bit test instead of logging it for apply().
  void build_filter();
  // False only if no record starts in [a, a + bytes) (a range inside one space).
  bool may_hold_range(Address a, std::uint64_t bytes) const noexcept {
    if (filter_empty_ || bytes == 0) return false;
    for (std::size_t s = 0; s < spaces_.size(); ++s) {
      const Address off = a - spaces_[s].begin();
      if (off >= spaces_[s].size()) continue;
      if (filter_[s].empty()) return false;  // a space that never held a record
      const std::uint64_t last = (std::min(off + bytes, spaces_[s].size()) - 1) >> region_shift_[s];
      for (std::uint64_t r = off >> region_shift_[s]; r <= last; ++r)
        if ((filter_[s][r >> 6] >> (r & 63)) & 1) return true;
      return false;
    }
    return false;
  }
  // False only if no record starts at `a` (until the next apply()).
  bool may_hold(Address a) const noexcept {
    if (filter_empty_) return false;
    for (std::size_t s = 0; s < spaces_.size(); ++s) {
      const Address off = a - spaces_[s].begin();
      if (off >= spaces_[s].size()) continue;
      if (filter_[s].empty()) return false;  // a space that never held a record
      const std::uint64_t r = off >> region_shift_[s];
      return (filter_[s][r >> 6] >> (r & 63)) & 1;
    }
    return false;
  }

  // Calls fn(addr, record&) for every record that is stale at `epoch` with threshold k and
  // that a full collection has seen alive since its last access: `full_after` is one past
  // the epoch of the latest full (not minor) GC, 0 if none yet.
  // `progressed(record)` adds the second condition (its owner's progress since the last access,
  // ProgressClocks); it is asked only about records that meet the first ones.
  template <class Progressed, class Fn>
  void for_each_stale(std::uint32_t epoch, std::uint32_t k, std::uint64_t full_after, Progressed&& progressed, Fn&& fn) {
    for (std::size_t s = 0; s < tables_.size(); ++s)
      for (TrackedRecord& r : tables_[s])
        if (epoch - r.last_access >= k && epoch >= r.last_access && full_after > r.last_access && progressed(r))
          fn(spaces_[s].address_of(r.granule), r);
  }

  // site_type = map(site_type) for every record (a detached thread's objects go to the program's
  // clock: ProgressClocks).
  template <class Map>
  void rebind(Map&& map) {
    for (auto& t : tables_)
      for (TrackedRecord& r : t)
        if (r.site_type != kDead) r.site_type = map(r.site_type);
  }

  std::uint64_t live() const noexcept;
  std::uint64_t bytes() const noexcept;
  std::uint32_t log2_granule(std::size_t space) const { return spaces_[space].log2_alignment(); }

 private:
  int space_of(Address a) const noexcept;
  // Builds index_[s] over tables_[s], killing the earlier of two records at one granule.
  std::uint64_t build_index(std::size_t s);
  // Index of the live record of space s starting at granule g, or -1.
  std::int64_t lookup(std::size_t s, std::uint32_t g) const noexcept;
  // The live record starting at address a: sets s and returns its index, or -1.
  std::int64_t locate(Address a, std::size_t& s) const noexcept;
  // Kills the live records of space s that start in one of the GC's free ranges; returns how many.
  std::uint64_t kill_in_ranges(std::size_t s, std::span<const FreeRangeLog> runs);
  std::uint64_t kill_in_ranges_by_search(std::size_t s, std::span<const FreeRangeLog> runs);

  std::vector<HeapSpace> spaces_;
  std::vector<std::vector<TrackedRecord>> tables_;
  // Scratch reused by every apply(), so a GC allocates nothing in the steady state.
  // index_[s]: slots of (granule << 32 | record index + 1), 0 = empty; mask_[s] = size - 1.
  std::vector<std::vector<std::uint64_t>> index_;
  std::vector<std::uint64_t> mask_;
  std::vector<std::vector<Address>> new_addr_;
  std::vector<std::vector<TrackedRecord>> next_;
  std::vector<PendingResize> resize_scratch_;
  std::vector<FreeRangeLog> free_scratch_;
  // Per space, one bit per granule: the starts a GC's free ranges cover (apply, then cleared).
  struct FreedBits {
    std::uint64_t* words = nullptr;
    std::size_t bytes = 0;
  };
  std::vector<FreedBits> freed_;
  // The region filter (build_filter): words allocated on first use; filter_set_[s] lists the
  // words set by the last build, so a rebuild clears only those (O(records), not O(heap)).
  std::vector<std::vector<std::uint64_t>> filter_;
  std::vector<std::vector<std::uint32_t>> filter_set_;
  std::vector<unsigned> region_shift_;
  bool filter_empty_ = true;
};

}  // namespace objprof::internal
