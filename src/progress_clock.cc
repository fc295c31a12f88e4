#include "progress_clock.h"

#include <algorithm>

namespace objprof::internal {

std::uint32_t ProgressClocks::open(std::uint64_t epoch) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::uint32_t slot = 0;
  if (!free_.empty()) {
    slot = free_.back();
    free_.pop_back();
  } else {
    slot = static_cast<std::uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  Slot& s = slots_[slot];
  s.first_epoch = epoch;
  s.bytes.clear();  // keeps its capacity for the next thread
  // Room for a few dozen epochs now, on the attaching thread, rather than at the slot's first
  // record, inside a GC's gc_begin (resize doubles after that).
  s.bytes.reserve(kInitialEpochs);
  s.busiest = 0;
  s.closed = false;
  return slot;
}

void ProgressClocks::close(std::uint32_t slot) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (slot == kProgram || slot >= slots_.size()) return;
  slots_[slot].closed = true;
  any_closed_.store(true, std::memory_order_relaxed);
}

void ProgressClocks::record_locked(std::uint32_t slot, std::uint64_t epoch, std::uint64_t bytes) {
  Slot& s = slots_[slot];
  if (epoch < s.first_epoch) return;
  // One value per gc_begin; a thread attached in the middle of an epoch gets its first at the
  // next one, and the epochs before carry that first value back (nothing earlier was its own).
  const std::uint64_t i = epoch - s.first_epoch;
  // The slot has room for a few dozen epochs from open() (or the constructor, the program's):
  // a fresh profiler's first GCs otherwise grew the vector at 1, 2, 4 and 8 values, an
  // allocation and a copy each inside gc_begin. The usual call appends the next epoch's value.
  const std::size_t n = s.bytes.size();
  const std::uint64_t last = n == 0 ? 0 : s.bytes.back();
  const std::uint64_t before = i == 0 ? 0 : (i <= n ? s.bytes[i - 1] : last);
  if (i < n) {
    s.bytes[i] = bytes;
  } else {
    if (i > n) s.bytes.resize(i, last);
    s.bytes.push_back(bytes);
  }
  if (bytes > before) s.busiest = std::max(s.busiest, bytes - before);
}

bool ProgressClocks::is_closed(std::uint32_t slot) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return slot < slots_.size() && slots_[slot].closed;
}

void ProgressClocks::release_closed() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (std::uint32_t i = 1; i < slots_.size(); ++i) {
    Slot& s = slots_[i];
    if (!s.closed) continue;
    s.closed = false;
    free_.push_back(i);
  }
  any_closed_.store(false, std::memory_order_relaxed);
}

std::size_t ProgressClocks::slots_in_use() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return slots_.size() - free_.size();
}

}  // namespace objprof::internal
