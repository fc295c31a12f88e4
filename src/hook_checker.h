// HookChecker (private): the debug checks of the hook protocol (ProfilerOptions::check_hooks).
//
// The profiler itself trusts its embedder: it keeps state only for tracked objects, so a free
// of an address nobody allocated, a move onto an object that is still alive, or memory reused
// without a free would each be accepted and give wrong answers later (a lost leak, a record
// killed by an unrelated free). The checker keeps a shadow of every live object (address and
// size, sorted) and checks each hook against it:
// - on_alloc: the calling OS thread owns the ThreadState (the first thread that allocates
//   with it or detaches it) and the object is not empty (the profiler itself refuses one
//   outside every registered space); at the
//   next gc_begin, the new objects may not overlap each other or any object still alive;
// - on_free / on_move / on_move_range (checked at gc_end, where the cycle's events are
//   complete): the object is alive at its pre-GC address, it is freed or moved at most once
//   per GC, a range does not cut an object in two, a destination lies in a space, and no
//   object ends up overlapping another;
// - on_resize: the owning thread calls it, and (at the next gc_begin) an object starts there;
// - detach_thread: called by the owning thread.
// Each violation is reported once, naming the hook and the address; the shadow then follows
// what the hook most plausibly meant so one mistake does not cascade into many reports.
//
// Cost: 16 bytes per live object and an O(live) merge at each gc_begin and gc_end. It is meant
// for tests and debugging (the test suite turns it on with OBJPROF_CHECK_HOOKS=1).
#pragma once

#include "objprof/heap_space.h"
#include "objprof/thread_state.h"
#include "stale_tracker.h"

#include <tbb/enumerable_thread_specific.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

namespace objprof::internal {

class HookChecker {
 public:
  // Called for every violation, from the thread that found it (serialised by the checker).
  using Report = std::function<void(std::string_view hook, Address addr, std::string what)>;
  explicit HookChecker(Report report) : report_(std::move(report)) {}

  void set_spaces(std::vector<HeapSpace> spaces) { spaces_ = std::move(spaces); }

  // Mutator side, from any number of threads. The profiler has already refused allocations
  // outside every space; alloc() returns false for one it must drop as well (size 0).
  bool alloc(const ThreadState& thread, Address addr, std::uint64_t size);
  // on_resize: checked at the next gc_begin, when the epoch's allocations are known, that an
  // object starts at addr.
  bool resize(const ThreadState& thread, Address addr);
  void detach(const ThreadState& thread);

  // Collector side. The events are logged per collector thread and checked at gc_end.
  void gc_begin();
  void move(Address from, Address to);
  void move_range(Address from, Address to, std::uint64_t bytes);
  void free(Address addr);
  void free_range(Address addr, std::uint64_t bytes);
  void gc_end();

  std::size_t live_objects() const noexcept { return live_.size(); }

 private:
  struct Object {
    Address addr;
    std::uint64_t size;
  };
  struct Local {
    std::vector<Object> allocs;
    std::vector<MoveLog> moves;
    std::vector<RangeMoveLog> ranges;
    std::vector<Address> frees;
    std::vector<FreeRangeLog> free_ranges;
    std::vector<Address> resizes;
    // Skips the owner lookup for repeated allocs with one ThreadState, until any detach (a
    // detached ThreadState is freed, and a new one may get its address).
    const ThreadState* last_owned = nullptr;
    std::uint64_t last_owned_generation = 0;
  };

  void report(std::string_view hook, Address addr, std::string what);
  bool in_spaces(Address addr, std::uint64_t size) const noexcept;
  bool check_owner(const ThreadState& thread, Local& local, std::string_view hook);
  // Index of the live object starting exactly at addr, or npos.
  std::size_t find(Address addr) const noexcept;
  void check_resizes();

  Report report_;
  std::mutex report_mutex_;
  std::vector<HeapSpace> spaces_;
  std::vector<Object> live_;  // sorted by address, non-overlapping
  tbb::enumerable_thread_specific<Local> locals_;
  std::mutex owners_mutex_;
  std::unordered_map<const ThreadState*, std::thread::id> owners_;
  std::atomic<std::uint64_t> detach_generation_{1};
};

}  // namespace objprof::internal
