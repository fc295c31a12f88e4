// AddressMap (private): the analyzer's "which object lives at this address now" table.
//
// Open addressing with linear probing over two parallel arrays (8-byte keys, 4-byte object
// ids), grown at half load and deleted by backward shift (no tombstones). It holds live
// objects only, which is what keeps the analyzer's memory proportional to the live heap
// rather than to the trace. Address 0 is the empty key (the reader refuses allocations at 0).
//
// The hash keeps locality: the heap is cut into windows of 2^w granules (w <= 12, at most an
// eighth of the table); a window lands at a pseudo-random slot and its granules follow one
// another from there. Trace records come in address order far more often than not (bump
// allocation, sweeps, bitmap dumps), so consecutive operations touch consecutive slots and
// the hardware prefetcher streams the table instead of taking a cache miss per record (4x
// faster on a 25 MB table). Dense runs are bounded by the window, so a probe never walks
// further than 2^w slots even for back-to-back 8-byte objects.
//
// A shard's map holds one 64 KiB window of every group of 2^s (event_batch.h), and numbers
// granules as if the windows it holds were adjacent: the windows of a contiguous heap then get
// consecutive numbers, which Fibonacci hashing spreads evenly over the table. Scattered
// window numbers would place the windows' spans at random, and where several pile up the
// probe runs grow thousands of slots long.
#pragma once

#include "event_batch.h"
#include "objprof/config.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>

namespace objprof::analysis::internal {

class AddressMap {
 public:
  static constexpr std::uint32_t kMissing = 0xFFFF'FFFFu;
  static constexpr unsigned kMaxWindowBits = 12;

  // The map of a shard that holds one window of every 2^group_log2 (0: the whole heap).
  explicit AddressMap(unsigned group_log2 = 0) : group_log2_(group_log2) { rehash(1024); }

  std::size_t size() const noexcept { return size_; }

  // Grows now so that `more` puts will not rehash (a batch can then be prefetched safely).
  void reserve_more(std::size_t more) {
    while (2 * (size_ + more) > capacity_) rehash(capacity_ * 2);
  }
  // Starts loading the cache line a later find/put/erase of `addr` will probe first. Batched
  // callers prefetch a few operations ahead, so the table's cache misses overlap instead of
  // being paid one after another (the table is far larger than the caches on big traces).
  void prefetch(std::uint64_t addr) const noexcept {
    const std::size_t i = slot(addr);
    __builtin_prefetch(&keys_[i]);
    __builtin_prefetch(&vals_[i]);
  }

  std::uint32_t find(std::uint64_t addr) const noexcept {
    if (addr == 0) return kMissing;
    for (std::size_t i = slot(addr);; i = (i + 1) & mask_) {
      if (keys_[i] == addr) return vals_[i];
      if (keys_[i] == 0) return kMissing;
    }
  }

  // Sets addr -> id; returns the id it replaced, or kMissing.
  OBJPROF_ALWAYS_INLINE std::uint32_t put(std::uint64_t addr, std::uint32_t id) {
    if (2 * (size_ + 1) > capacity_) [[unlikely]] rehash(capacity_ * 2);
    for (std::size_t i = slot(addr);; i = (i + 1) & mask_) {
      if (keys_[i] == addr) return std::exchange(vals_[i], id);
      if (keys_[i] == 0) {
        keys_[i] = addr;
        vals_[i] = id;
        ++size_;
        return kMissing;
      }
    }
  }

  // Removes addr; returns its id or kMissing.
  std::uint32_t erase(std::uint64_t addr) noexcept {
    if (addr == 0) return kMissing;
    std::size_t i = slot(addr);
    for (;; i = (i + 1) & mask_) {
      if (keys_[i] == addr) break;
      if (keys_[i] == 0) return kMissing;
    }
    const std::uint32_t id = vals_[i];
    // Backward-shift deletion: pull later members of the probe run into the hole.
    for (std::size_t j = (i + 1) & mask_; keys_[j] != 0; j = (j + 1) & mask_) {
      const std::size_t home = slot(keys_[j]);
      // Move j into the hole i unless its home lies cyclically in (i, j].
      if (((j - home) & mask_) >= ((j - i) & mask_)) {
        keys_[i] = keys_[j];
        vals_[i] = vals_[j];
        i = j;
      }
    }
    keys_[i] = 0;
    --size_;
    return id;
  }

  // Removes every entry for which doomed(addr) holds, calling fn(addr, id) for each in slot
  // order, in one pass over the table. Erasing entries one by one costs a walk to the end of
  // their probe run each (backward shift), which adds up to the square of a run's length when
  // a whole run goes, as when a copying GC frees its evacuated space. The pass starts just
  // after an empty slot, so that no probe run wraps past its start; every survivor it meets is
  // re-inserted from its home, which lands it at or before its old slot, behind entries the
  // pass has already settled.
  template <class Doomed, class Fn>
  void erase_if(Doomed&& doomed, Fn&& fn) {
    std::size_t start = 0;
    while (keys_[start] != 0) ++start;  // load <= 1/2: there is an empty slot
    for (std::size_t n = 0, i = (start + 1) & mask_; n < capacity_; ++n, i = (i + 1) & mask_) {
      const std::uint64_t key = keys_[i];
      if (key == 0) continue;
      const std::uint32_t val = vals_[i];
      keys_[i] = 0;
      if (doomed(key)) {
        --size_;
        fn(key, val);
        continue;
      }
      std::size_t j = slot(key);
      while (keys_[j] != 0) j = (j + 1) & mask_;
      keys_[j] = key;
      vals_[j] = val;
    }
  }

  std::size_t capacity() const noexcept { return capacity_; }
  // How many occupied slots a lookup of addr passes before it finds it or an empty slot (tests).
  std::size_t probe_length(std::uint64_t addr) const noexcept {
    std::size_t n = 0;
    for (std::size_t i = slot(addr); keys_[i] != 0 && keys_[i] != addr; i = (i + 1) & mask_) ++n;
    return n;
  }

  std::uint64_t memory_bytes() const noexcept { return capacity_ * (sizeof(std::uint64_t) + sizeof(std::uint32_t)); }

 private:
  std::size_t slot(std::uint64_t addr) const noexcept {
    // 8-byte granules (the finest any space uses), the windows this map holds made adjacent.
    // (A branch rather than the general formula alone: a whole-heap map, by far the common
    // case, then pays one shift, and the branch always goes the same way for a map.)
    constexpr unsigned kInWindow = kShardWindowBits - 3;
    const std::uint64_t g = group_log2_ == 0 ? addr >> 3
                                             : ((addr >> kShardWindowBits >> group_log2_) << kInWindow) |
                                                   ((addr >> 3) & ((std::uint64_t{1} << kInWindow) - 1));
    const std::uint64_t window = ((g >> window_bits_) * 0x9E37'79B9'7F4A'7C15ull) >> shift_;  // Fibonacci hashing
    return static_cast<std::size_t>((window + (g & ((std::uint64_t{1} << window_bits_) - 1))) & mask_);
  }

  OBJPROF_NOINLINE void rehash(std::size_t capacity) {
    std::unique_ptr<std::uint64_t[]> old_keys = std::move(keys_);
    std::unique_ptr<std::uint32_t[]> old_vals = std::move(vals_);
    const std::size_t old_capacity = old_keys ? capacity_ : 0;
    capacity_ = capacity;
    mask_ = capacity - 1;
    const unsigned log2_capacity = static_cast<unsigned>(__builtin_ctzll(capacity));
    shift_ = 64 - log2_capacity;
    window_bits_ = std::min(kMaxWindowBits, log2_capacity - 3);
    keys_ = std::make_unique<std::uint64_t[]>(capacity);  // zeroed: all empty
    vals_ = std::make_unique_for_overwrite<std::uint32_t[]>(capacity);
    size_ = 0;
    for (std::size_t i = 0; i < old_capacity; ++i)
      if (old_keys[i] != 0) put(old_keys[i], old_vals[i]);
  }

  std::unique_ptr<std::uint64_t[]> keys_;
  std::unique_ptr<std::uint32_t[]> vals_;
  std::size_t capacity_ = 0, mask_ = 0, size_ = 0;
  unsigned shift_ = 64;
  unsigned window_bits_ = 0;
  unsigned group_log2_ = 0;
};

}  // namespace objprof::analysis::internal
