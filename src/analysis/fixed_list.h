// A list with room for N elements, allocated once: an append is one store of the count and a
// reused slot. The analyzer's batches use it on their hot paths, where a vector's growth check
// and emplace (which GCC keeps out of line) cost ~30 instructions an element.
#pragma once

#include <cstddef>
#include <memory>

namespace objprof::analysis::internal {

template <class T, std::size_t N>
class FixedList {
 public:
  FixedList() : slots_(std::make_unique<T[]>(N)) {}
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  bool full() const noexcept { return size_ >= N; }
  const T& operator[](std::size_t i) const noexcept { return slots_[i]; }
  const T& back() const noexcept { return slots_[size_ - 1]; }
  T& back() noexcept { return slots_[size_ - 1]; }
  const T* begin() const noexcept { return slots_.get(); }
  const T* end() const noexcept { return slots_.get() + size_; }
  // The caller has checked that the list is not full. The slot is reused as it is: the caller
  // sets what it needs (and its reader reads only that), or assigns a fresh T.
  T& append() noexcept { return slots_[size_++]; }
  void clear() noexcept { size_ = 0; }
  // The capacity's bytes (peak-memory accounting counts the room, not the size).
  static constexpr std::size_t capacity_bytes() noexcept { return N * sizeof(T); }

 private:
  std::unique_ptr<T[]> slots_;
  std::size_t size_ = 0;
};

}  // namespace objprof::analysis::internal
