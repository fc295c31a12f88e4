// SegmentedVector<T>: an append-only array stored in fixed blocks of 2^16 elements.
//
// The analyzer keeps one record per object ever allocated (tens of millions for a long trace).
// A std::vector would double its capacity when it grows, briefly holding the old and the new
// array (up to 3x the data) and copying every element; fixed blocks never move, so growth
// costs one block at a time, memory stays within one block of the data, and references to
// elements stay valid while the array grows. Blocks are also the natural grain for parallel
// loops (oneTBB ranges over ids).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace objprof::analysis {

template <class T>
class SegmentedVector {
 public:
  static constexpr std::size_t kLog2Block = 16;
  static constexpr std::size_t kBlock = std::size_t{1} << kLog2Block;

  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }

  T& operator[](std::size_t i) noexcept { return blocks_[i >> kLog2Block][i & (kBlock - 1)]; }
  const T& operator[](std::size_t i) const noexcept { return blocks_[i >> kLog2Block][i & (kBlock - 1)]; }

  // Returns the new element's index.
  std::size_t push_back(const T& v) {
    if ((size_ & (kBlock - 1)) == 0) [[unlikely]]
      grow();
    tail_[size_ & (kBlock - 1)] = v;
    return size_++;
  }

  void clear() noexcept {
    blocks_.clear();
    tail_ = nullptr;
    size_ = 0;
  }

  // Bytes held (whole blocks plus the block table).
  std::uint64_t memory_bytes() const noexcept {
    return blocks_.size() * kBlock * sizeof(T) + blocks_.capacity() * sizeof(void*);
  }

 private:
  // Out of line: the append fast path stays a compare, a store and an increment.
  __attribute__((noinline)) void grow() {
    blocks_.push_back(std::make_unique_for_overwrite<T[]>(kBlock));
    tail_ = blocks_.back().get();
  }

  std::vector<std::unique_ptr<T[]>> blocks_;
  T* tail_ = nullptr;  // the last block
  std::size_t size_ = 0;
};

}  // namespace objprof::analysis
