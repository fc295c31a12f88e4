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
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>

namespace objprof::analysis::internal {

class AddressMap {
 public:
  static constexpr std::uint32_t kMissing = 0xFFFF'FFFFu;

  AddressMap() { rehash(1024); }

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
  std::uint32_t put(std::uint64_t addr, std::uint32_t id) {
    if (2 * (size_ + 1) > capacity_) rehash(capacity_ * 2);
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

  template <class Fn>
  void for_each(Fn&& fn) const {
    for (std::size_t i = 0; i < capacity_; ++i)
      if (keys_[i] != 0) fn(keys_[i], vals_[i]);
  }

  std::uint64_t memory_bytes() const noexcept { return capacity_ * (sizeof(std::uint64_t) + sizeof(std::uint32_t)); }

 private:
  std::size_t slot(std::uint64_t addr) const noexcept {
    const std::uint64_t g = addr >> 3;  // 8-byte granules: the finest any space uses
    const std::uint64_t window = ((g >> window_bits_) * 0x9E37'79B9'7F4A'7C15ull) >> shift_;  // Fibonacci hashing
    return static_cast<std::size_t>((window + (g & ((std::uint64_t{1} << window_bits_) - 1))) & mask_);
  }

  void rehash(std::size_t capacity) {
    std::unique_ptr<std::uint64_t[]> old_keys = std::move(keys_);
    std::unique_ptr<std::uint32_t[]> old_vals = std::move(vals_);
    const std::size_t old_capacity = old_keys ? capacity_ : 0;
    capacity_ = capacity;
    mask_ = capacity - 1;
    const unsigned log2_capacity = static_cast<unsigned>(__builtin_ctzll(capacity));
    shift_ = 64 - log2_capacity;
    window_bits_ = std::min(12u, log2_capacity - 3);
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
};

}  // namespace objprof::analysis::internal
