// StaleTracker (private): the online leak detector's table. One table per space, each a
// vector of 16-byte records sorted by granule, so the profiler keeps 16 bytes per tracked
// object beyond the bitmap. Updates from the hooks are logged and applied in bulk at GC
// (merge new objects, apply the epoch's access bits, then moves and deaths, then re-sort).
#pragma once

#include "objprof/access_bitmap.h"
#include "objprof/heap_space.h"
#include "objprof/thread_state.h"

#include <cstdint>
#include <span>
#include <vector>

namespace objprof::internal {

struct TrackedRecord {
  std::uint32_t granule;      // offset in its space, in granules (the sort key)
  std::uint32_t site_type;    // interned (site, type) pair
  std::uint32_t size_flags;   // size in granules (31 bits) | reported flag (bit 31)
  std::uint32_t last_access;  // last epoch with an access (birth counts as one)
};
static_assert(sizeof(TrackedRecord) == 16, "the tracker promises 16 bytes per tracked object");

struct MoveLog { Address from, to; };
struct RangeMoveLog { Address from, to; std::uint64_t bytes; };

class StaleTracker {
 public:
  static constexpr std::uint32_t kReported = 0x8000'0000u;
  static constexpr std::uint32_t kSizeMask = 0x7FFF'FFFFu;
  static constexpr std::uint32_t kDead = 0xFFFF'FFFFu;

  void set_spaces(std::vector<HeapSpace> spaces);
  // Largest granule index a record can hold; spaces above it are rejected at add_space.
  static constexpr std::uint64_t kMaxGranules = 0xFFFF'FFFFull;

  // Returns false if addr is in no space (the object is then not tracked).
  bool add(const PendingTracked& p);
  void merge_pending();
  // last_access = epoch for every record whose granule is marked in `bits` (space index i).
  void apply_bits(std::size_t space, const BitmapSnapshot& bits, std::uint32_t epoch);
  struct ApplyResult { std::uint64_t freed = 0, moved = 0, left_spaces = 0, conflicts = 0; };
  ApplyResult apply(std::span<const MoveLog> moves, std::span<const RangeMoveLog> ranges,
                    std::span<const Address> frees);

  // Calls fn(addr, record&) for every record that is stale at `epoch` with threshold k.
  template <class Fn>
  void for_each_stale(std::uint32_t epoch, std::uint32_t k, Fn&& fn) {
    for (std::size_t s = 0; s < tables_.size(); ++s)
      for (TrackedRecord& r : tables_[s])
        if (epoch - r.last_access >= k && epoch >= r.last_access) fn(spaces_[s].address_of(r.granule), r);
  }

  std::uint64_t live() const noexcept;
  std::uint64_t bytes() const noexcept;
  std::uint32_t log2_granule(std::size_t space) const { return spaces_[space].log2_alignment(); }

 private:
  int space_of(Address a) const noexcept;
  TrackedRecord* find(std::size_t space, std::uint32_t granule);

  std::vector<HeapSpace> spaces_;
  std::vector<std::vector<TrackedRecord>> tables_;
  std::vector<std::vector<TrackedRecord>> staged_;  // merged at the next merge_pending
};

}  // namespace objprof::internal
