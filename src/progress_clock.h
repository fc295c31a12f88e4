// ProgressClocks (private): how far each mutator thread, and the program as a whole, got in
// bytes allocated, read at every gc_begin. The stale check asks an object's owner (the thread
// that allocated it) how much it allocated since the object's last access: a thread the OS did
// not schedule, or that waits, made no progress, so its working set does not age however many
// GCs the other threads cause; and a GC storm (many GCs, little allocation) does not age
// anything much.
//
// Slot 0 is the program's clock (every thread's bytes, detached ones included). A thread owns
// one slot from attach to detach; when it detaches, its objects are handed to slot 0 at the
// next gc_begin (StaleTracker::rebind) and the slot is reused by a later thread, so a runtime
// that starts a thread per request keeps as many slots as it has threads at once.
//
// Each slot keeps its thread's value at every gc_begin since the thread attached: 8 bytes per
// thread per epoch of its life.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

namespace objprof::internal {

class ProgressClocks {
 public:
  static constexpr std::uint32_t kProgram = 0;

  // A slot for a thread attached in `epoch` (any thread; under the caller's lock or not).
  std::uint32_t open(std::uint64_t epoch);
  // The thread of `slot` detached: the slot is released at the next release_ended().
  void close(std::uint32_t slot);
  // At gc_begin(epoch), mutators stopped: the program's bytes, then each attached thread's.
  void record_program(std::uint64_t epoch, std::uint64_t bytes);
  void record(std::uint32_t slot, std::uint64_t epoch, std::uint64_t bytes);
  // Slots closed since the last release (their objects must be rebound first).
  bool any_closed() const;
  bool is_closed(std::uint32_t slot) const;
  void release_closed();

  // Reads under one lock (the stale check asks once per candidate object).
  class View {
   public:
    explicit View(const ProgressClocks& c) : lock_(c.mutex_), c_(&c) {}
    // Bytes allocated on `slot`'s clock from the end of epoch `from` to the end of epoch `to`
    // (`to` already recorded; 0 when to <= from).
    std::uint64_t progress(std::uint32_t slot, std::uint64_t from, std::uint64_t to) const;
    // The most `slot` allocated in one epoch so far (the automatic threshold).
    std::uint64_t busiest_epoch(std::uint32_t slot) const;

   private:
    std::unique_lock<std::mutex> lock_;
    const ProgressClocks* c_;
  };
  View view() const { return View(*this); }

  std::size_t slots_in_use() const;

 private:
  struct Slot {
    std::uint64_t first_epoch = 0;     // the first gc_begin it saw
    std::vector<std::uint64_t> bytes;  // at gc_begin(first_epoch + i)
    std::uint64_t busiest = 0;         // largest step between two consecutive values (the first from 0)
    bool in_use = false, closed = false;
  };
  static std::uint64_t value(const Slot& s, std::uint64_t epoch);

  mutable std::mutex mutex_;  // attach/detach from any thread against the collector's reads
  std::vector<Slot> slots_{Slot{0, {}, true, false}};
  std::vector<std::uint32_t> free_;
  bool any_closed_ = false;
};

}  // namespace objprof::internal
