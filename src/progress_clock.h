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

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

namespace objprof::internal {

class ProgressClocks {
 public:
  static constexpr std::uint32_t kProgram = 0;

  ProgressClocks() { slots_[kProgram].bytes.reserve(kInitialEpochs); }

  // A slot for a thread attached in `epoch` (any thread; under the caller's lock or not).
  std::uint32_t open(std::uint64_t epoch);
  // The thread of `slot` detached: the slot is released at the next release_closed().
  void close(std::uint32_t slot);
  // At gc_begin(epoch), mutators stopped: each attached thread's bytes and the program's, all
  // under one lock (a Recorder holds it while it lives; the clocks' lock is a leaf: hold
  // nothing else under it).
  class Recorder {
   public:
    explicit Recorder(ProgressClocks& c) : lock_(c.mutex_), c_(&c) {}
    void record(std::uint32_t slot, std::uint64_t epoch, std::uint64_t bytes) { c_->record_locked(slot, epoch, bytes); }
    void record_program(std::uint64_t epoch, std::uint64_t bytes) { c_->record_locked(kProgram, epoch, bytes); }

   private:
    std::unique_lock<std::mutex> lock_;
    ProgressClocks* c_;
  };
  Recorder recorder() { return Recorder(*this); }
  // Slots closed since the last release (their objects must be rebound first). Asked at every
  // gc_begin, and almost always false: a flag read without the lock, written under it; a
  // detach racing with the read is seen at the next gc_begin.
  bool any_closed() const noexcept { return any_closed_.load(std::memory_order_relaxed); }
  bool is_closed(std::uint32_t slot) const;
  void release_closed();

 private:
  struct Slot {
    std::uint64_t first_epoch = 0;     // the first gc_begin it saw
    std::vector<std::uint64_t> bytes;  // at gc_begin(first_epoch + i)
    std::uint64_t busiest = 0;         // largest step between two consecutive values (the first from 0)
    bool closed = false;               // its thread detached; released at the next release_closed()
  };

 public:
  // Reads under one lock (the stale check asks once per candidate object).
  class View {
   public:
    explicit View(const ProgressClocks& c) : lock_(c.mutex_), c_(&c) {}
    // The most `slot` allocated in one epoch so far (the automatic threshold).
    std::uint64_t busiest_epoch(std::uint32_t slot) const {
      return slot < c_->slots_.size() ? c_->slots_[slot].busiest : 0;
    }

    // `slot`'s clock read at the end of epoch `to` (already recorded). The stale check reads an
    // owner's clock once and asks it for every candidate of that owner, so the slot's lookup
    // and its value at `to` are not repeated per object.
    class Reading {
     public:
      // Bytes allocated on the slot's clock from the end of epoch `from` to the reading's `to`
      // (0 when `to` <= `from`).
      std::uint64_t since(std::uint64_t from) const {
        if (slot_ == nullptr || to_ <= from) return 0;
        const std::uint64_t a = value(*slot_, from);
        return at_to_ > a ? at_to_ - a : 0;
      }
      std::uint64_t busiest_epoch() const { return slot_ != nullptr ? slot_->busiest : 0; }

     private:
      friend class View;
      const Slot* slot_ = nullptr;
      std::uint64_t to_ = 0, at_to_ = 0;
    };
    Reading read(std::uint32_t slot, std::uint64_t to) const {
      Reading r;
      if (slot >= c_->slots_.size()) return r;
      r.slot_ = &c_->slots_[slot];
      r.to_ = to;
      r.at_to_ = value(*r.slot_, to);
      return r;
    }

   private:
    std::unique_lock<std::mutex> lock_;
    const ProgressClocks* c_;
  };
  View view() const { return View(*this); }

  std::size_t slots_in_use() const;

 private:
  static std::uint64_t value(const Slot& s, std::uint64_t epoch) {
    if (s.bytes.empty() || epoch < s.first_epoch) return 0;  // before the thread allocated anything here
    const std::uint64_t i = epoch - s.first_epoch;
    return i < s.bytes.size() ? s.bytes[i] : s.bytes.back();
  }

  static constexpr std::size_t kInitialEpochs = 64;  // values a slot holds before it grows
  void record_locked(std::uint32_t slot, std::uint64_t epoch, std::uint64_t bytes);

  mutable std::mutex mutex_;  // attach/detach from any thread against the collector's reads
  // The program's clock, which never closes. Its busiest step starts at 0 like every thread's
  // (the offline analyzer's busiest epoch does): an automatic threshold is what was allocated.
  std::vector<Slot> slots_{Slot{}};
  std::vector<std::uint32_t> free_;
  std::atomic<bool> any_closed_{false};
};

}  // namespace objprof::internal
