// The simulated runtime's heap: object model, spaces and collectors (docs/sim.md).
//
// sim/ is objprof's first embedder and uses only the public API (include/objprof), exactly as a
// third-party runtime would.
//
// Object model: every object starts on an 8-byte boundary with a 16-byte header
//   word 0: u32 type id (0 = a free cell of the mark-sweep space), u32 flags (kForwarded)
//   word 1: array length (arrays), unused (0) for class instances, or the forwarding address
//           while a copying GC runs (flags & kForwarded)
// followed by 8-byte slots: one per field of a class instance, one per element of an array.
// Which slots hold references comes from the SimType (IR type declarations).
//
// Layout: one contiguous reservation of `heap_bytes`, registered with the profiler as ONE
// HeapSpace "sim-heap" (so one barrier descriptor covers every object):
//   semispace: [ half A | large-object space | half B ] (the halves take turns as from-space)
//   marksweep, lazysweep: [ mark-sweep space | large-object space ]
// The large-object space (LOS, a quarter of the heap) holds objects of at least
// `large_object_threshold` bytes (ART: 3 pages), page-granular, never moved.
//
// Deaths: every collector reports every dead object with Profiler::on_free (the copying
// collector walks the evacuated from-space after the copy), so the profiler's tracker is exact.
//
// Collections: an allocation that finds no room collects (stop the world) and tries again. The
// mark-sweep heaps allocate best fit from free lists of coalesced gaps; when an allocation
// fails although much of the space is free (HeapOptions::compact_free_fraction), or still fails
// after a sweep, they compact instead: mark, then slide the live objects down (on_move). Only
// when that cannot help either is the allocation an out-of-memory error.
//
// Threads: mutators attach (attach_mutator) with their root provider and ThreadState; the heap
// runs a stop-the-world handshake: a GC starts only when every attached mutator is parked at a
// safepoint (allocate, safepoint, collect). Everything else in this class is called by a mutator
// holding no lock; the heap serialises allocation with one mutex (a simulator, not a fast VM).
//
// Lazy sweep (GcPolicy::kLazySweep, the design's CMS): the collection marks with the world
// stopped (gc_begin there) and sweeps the LOS at once, but the mark-sweep space is swept in
// steps: every allocation first sweeps `lazy_sweep_step` bytes of it, under the heap mutex, on
// the allocating mutator's thread, while the other mutators run; the step that reaches the end
// calls gc_end. Allocation meanwhile uses only cells the sweep has passed or fresh bump space, so
// the sweep never meets an object allocated during it. An allocation that does not fit sweeps
// on, step by step, until it fits or the sweep is over; a new collection and the last mutator's
// detach_mutator finish a pending sweep.
#pragma once

#include <objprof/heap_walk.h>
#include <objprof/profiler.h>
#include <objprof/result.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace objprof::sim {

enum class DeathReports;  // free_runs.h: how a collector loop reports deaths
enum class MoveReports;   // move_runs.h: and moves

inline constexpr std::uint64_t kHeaderBytes = 16;
inline constexpr std::uint64_t kSlotBytes = 8;
inline constexpr std::uint32_t kFreeCellType = 0;
inline constexpr std::uint32_t kForwarded = 1;

struct ObjHeader {
  std::uint32_t type;
  std::uint32_t flags;
  std::uint64_t word;
};
static_assert(sizeof(ObjHeader) == kHeaderBytes);
// Compiled code reads Heap::stop_flag() as one byte.
static_assert(sizeof(std::atomic<bool>) == 1 && std::atomic<bool>::is_always_lock_free);

struct SimType {
  std::uint32_t id = 0;
  std::string name;
  bool is_array = false;
  bool elem_is_ref = false;              // arrays
  std::vector<std::string> field_names;  // class instances: one slot per field
  std::vector<std::uint8_t> slot_is_ref;
  std::uint32_t num_slots() const { return static_cast<std::uint32_t>(slot_is_ref.size()); }
};

enum class GcPolicy : std::uint8_t { kSemiSpace, kMarkSweep, kLazySweep };
const char* gc_policy_name(GcPolicy p);  // "semispace", "marksweep", "lazysweep"
// Every policy, for tests and tools that run each one.
inline constexpr GcPolicy kAllGcPolicies[] = {GcPolicy::kSemiSpace, GcPolicy::kMarkSweep, GcPolicy::kLazySweep};
// The kind each policy reports to gc_begin: kCopying, kFull, kConcurrent (mutators run inside
// a lazy sweep's bracket).
GcKind gc_policy_kind(GcPolicy p);

struct HeapOptions {
  std::uint64_t heap_bytes = 8ull << 20;
  GcPolicy gc = GcPolicy::kSemiSpace;
  std::uint64_t large_object_threshold = 3 * 4096;
  // Mark-sweep heaps at least this large mark with oneTBB work stealing (a parallel_for_each
  // over batches of roots whose tasks hand half of a growing local stack to the feeder);
  // smaller heaps mark on one thread. 0: always parallel. Off by default: on the project's
  // 2-core VM the parallel marker only matches the serial one at 2M live objects and is 1.7x
  // slower at 262K (docs/results.md, "Parallel marking"), so it is opt-in.
  std::uint64_t parallel_mark_min_heap = ~0ull;
  // kLazySweep: bytes of the mark-sweep space each allocation sweeps before it allocates (at
  // least one cell). Small enough that a sweep spans many allocations, large enough that it
  // usually ends long before the space runs out (an allocation that does not fit sweeps on).
  std::uint64_t lazy_sweep_step = 4096;
  // Mark-sweep and lazy sweep: an allocation that finds no gap while at least this fraction of
  // the mark-sweep space is free fails for fragmentation, not for want of memory, and a sweep
  // would leave the live objects where they are: the heap compacts instead (a sliding
  // mark-compact, GcKind::kCompacting, as CMS falls back to a compacting full GC). An
  // allocation that still fails after a sweep compacts too, when the free bytes would hold it.
  // 0: every collection an allocation starts compacts; above 1: compact only after a sweep
  // has failed. Compaction is the exception: best fit keeps the space usable on the shipped
  // workloads (docs/sim.md).
  double compact_free_fraction = 0.25;
  // Deaths go to the profiler as runs: adjacent dead objects as one on_free_range (sweeps,
  // compaction), and a semispace GC's whole evacuated from-space as one range after its moves
  // (a range frees only what the GC did not move). false: one on_free per dead object.
  bool free_ranges = true;
  // Moves go to the profiler as runs: objects next to each other copied (semispace) or slid
  // (compaction) next to each other as one on_move_range (move_runs.h). false: one on_move per
  // moved object.
  bool move_ranges = true;
  // Root marks (ir::ElimOptions::roots_marked): every collection hands each object a mutator
  // frame references to Profiler::on_root, at its post-GC address, before the mutators resume,
  // so code compiled under the root-marks model loses no mark. The interpreter's frames hold
  // every register, live or not: more than the model needs, never less.
  bool mark_frame_roots = false;
  // Write every page of the heap when it is created, as a JVM's -XX:+AlwaysPreTouch does, so
  // the kernel's page faults (and its zeroing of each fresh page) happen in set-up rather than
  // in the first allocations and collections that reach each page. The benchmarks turn it on:
  // their timed runs then see the memory a long-running runtime sees, not a cold start whose
  // fault costs vary from run to run (docs/results.md, "Part 5").
  bool pretouch = false;
};

struct GcInfo {
  std::uint64_t index = 0;  // 1-based
  GcPolicy policy = GcPolicy::kSemiSpace;
  std::uint64_t live_bytes_after = 0;
  std::uint64_t freed_objects = 0, moved_objects = 0, freed_bytes = 0;
  // Wall clock and the collecting threads' CPU time (robust to a loaded machine) of the GC's own
  // work: for a lazy sweep, the stopped-world mark plus every sweep step (a step's CPU time is
  // its wall time), not the mutator work between the steps.
  double seconds = 0;
  double cpu_seconds = 0;
  // Mark-sweep heaps: wall time of the mark alone (roots and the traced graph).
  double mark_seconds = 0;
  // kLazySweep: the steps that swept the space, and the objects allocated between gc_begin and
  // gc_end (by the mutators, while the sweep was pending).
  std::uint64_t sweep_steps = 0, allocated_in_sweep = 0;
  // Mark-sweep space after the GC (for a lazy sweep: when it ended): free bytes (free lists and
  // bump region) and the largest free gap, so fragmentation shows.
  std::uint64_t free_bytes_after = 0, largest_free_after = 0;
  // Mark-sweep heaps: this GC compacted the space (GcKind::kCompacting) instead of sweeping it.
  bool compacted = false;
};

struct HeapStats {
  std::uint64_t gcs = 0;
  std::uint64_t objects_allocated = 0, bytes_allocated = 0;
  std::uint64_t objects_freed = 0, bytes_freed = 0, objects_moved = 0;
  std::uint64_t large_objects_allocated = 0;
  std::uint64_t live_bytes_after_last_gc = 0;
  double gc_seconds = 0;
  double gc_cpu_seconds = 0;
  // kLazySweep: sweep steps, objects allocated while a sweep was pending, and how many of those
  // took memory the pending sweep had already swept (rather than fresh bump space).
  std::uint64_t sweep_steps = 0, objects_allocated_in_sweep = 0, objects_reused_in_sweep = 0;
  // Mark-sweep heaps: the GCs that compacted (counted in gcs too).
  std::uint64_t compactions = 0;
};

// Visits a root slot; the collector may overwrite it (the object moved).
using RootFn = std::function<void(std::uint64_t& slot)>;
// Visits a root for paths from roots (sim/heap_walker.h): its kind, a number the provider's
// root_name turns into a name, and the object it refers to (never 0).
using NamedRootFn = std::function<void(RootKind kind, std::uint64_t token, Address target)>;

class RootProvider {
 public:
  virtual ~RootProvider() = default;
  virtual void visit_roots(const RootFn& fn) = 0;
  // The roots of visit_roots with their kinds, in the same order, for the heap walker; the
  // world is stopped. Default: kind "other", numbered in visit order.
  virtual void visit_named_roots(const NamedRootFn& fn);
  virtual std::string root_name(RootKind kind, std::uint64_t token) const;
};

// One attached mutator thread.
struct Mutator {
  RootProvider* roots = nullptr;
  ThreadState* thread = nullptr;  // null when the heap runs without a profiler
};

// Parks the calling mutator while a stop-the-world GC is requested (and does nothing else).
class Heap {
 public:
  static Result<std::unique_ptr<Heap>> create(const HeapOptions& options, Profiler* profiler);
  ~Heap();
  Heap(const Heap&) = delete;
  Heap& operator=(const Heap&) = delete;

  // Types: ids from 1, also defined with the profiler. Call before mutators start.
  Result<std::uint32_t> add_type(SimType type);
  const SimType& type(std::uint32_t id) const { return types_[id]; }
  std::size_t type_count() const { return types_.size(); }

  // Mutators.
  void attach_mutator(Mutator* m);
  void detach_mutator(Mutator* m);
  // Extra roots (statics, handle tables); called under the world stop.
  void add_root_provider(RootProvider* p);
  void remove_root_provider(RootProvider* p);
  // Global handles: slots the embedder reads and writes between safepoints.
  std::vector<std::uint64_t>& handles() { return handles_; }

  // Allocates a zeroed object (length = array length; ignored for class instances). May GC.
  // Errors: out of memory (names the heap size), bad type, absurd length.
  Result<Address> allocate(Mutator& m, std::uint32_t site, std::uint32_t type, std::uint64_t length = 0);
  // A GC point: parks while another thread collects.
  void safepoint(Mutator& m) {
    if (stop_requested_.load(std::memory_order_acquire)) park_slow(m);
  }
  // The flag safepoint() tests, for compiled code that polls it inline (a byte: nonzero while
  // a collector waits for the mutators to park; then call safepoint()).
  const std::atomic<bool>& stop_flag() const { return stop_requested_; }
  // Forces a collection (stop the world). kLazySweep: finishes a pending sweep, marks, and
  // returns with the new sweep pending (allocations sweep it).
  Status collect(Mutator& m);
  // Mark-sweep heaps: forces a compacting collection (stop the world, mark, slide every live
  // object of the mark-sweep space down, reporting on_move and on_free), after finishing a
  // pending lazy sweep. The space is left as one bump region. Semispace: an ordinary GC.
  Status compact(Mutator& m);
  // kLazySweep: sweeps the rest of the mark-sweep space now and ends the GC (gc_end, on_gc);
  // nothing when no sweep is pending. Other mutators may keep running.
  Status finish_sweep(Mutator& m);
  // A lazy sweep is pending: the GC bracket is open (for tests and progress output).
  bool sweeping() const;

  // Object access. Slots are atomics (release stores, acquire loads): mutators may share
  // objects, and a reference published through a slot publishes the object's header with it.
  // (Plain moves on x86_64; ldar/stlr on arm64.)
  static ObjHeader& header(Address obj) { return *reinterpret_cast<ObjHeader*>(obj); }
  static std::uint64_t* slots(Address obj) { return reinterpret_cast<std::uint64_t*>(obj + kHeaderBytes); }
  static std::uint64_t load(Address obj, std::uint64_t i) {
    return std::atomic_ref<std::uint64_t>(slots(obj)[i]).load(std::memory_order_acquire);
  }
  static void store(Address obj, std::uint64_t i, std::uint64_t v) {
    std::atomic_ref<std::uint64_t>(slots(obj)[i]).store(v, std::memory_order_release);
  }
  const SimType& type_of(Address obj) const { return types_[header(obj).type]; }
  std::uint64_t slot_count(Address obj) const { return slot_count(header(obj), types_.data()); }
  // The same from a header and the type table, for a loop that calls out and would otherwise
  // reload the table at every object (walk_from_space).
  static std::uint64_t slot_count(const ObjHeader& h, const SimType* types) {
    const SimType& t = types[h.type];
    return t.is_array ? h.word : t.num_slots();
  }
  bool slot_is_ref(Address obj, std::uint64_t i) const {
    const SimType& t = type_of(obj);
    return t.is_array ? t.elem_is_ref : t.slot_is_ref[i] != 0;
  }
  std::uint64_t object_size(Address obj) const { return kHeaderBytes + kSlotBytes * slot_count(obj); }
  bool contains(Address a) const { return a - base_ < options_.heap_bytes; }

  // Every object currently in the heap (live or not yet collected: during a lazy sweep, the
  // dead objects of the unswept part too); world must be stopped or single-threaded.
  void for_each_object(const std::function<void(Address)>& fn) const;

  // The mark-sweep space's free memory: bytes on the free lists plus the bump region, the
  // number of gaps (free spans, the bump region counting as one) and the largest, the biggest
  // object that fits without a collection. Zero for the semispace heap. World stopped or
  // single-threaded (a lazy sweep's unswept garbage is not free yet).
  struct FreeSpace {
    std::uint64_t free_bytes = 0, gaps = 0, largest_gap = 0;
  };
  FreeSpace free_space() const;
  // For the heap walker (sim/heap_walker.h), inside the profiler's gc_end, which the heap
  // calls holding its mutex. Every root visit_all_roots visits, each with a kind and a token
  // that root_name turns into a name: root providers (statics) first, then handles, then the
  // mutators' frames, so that of equally short paths a leak's is the longest-lived root's.
  void visit_named_roots(const NamedRootFn& fn);
  std::string root_name(RootKind kind, std::uint64_t token) const;
  // No mutator but the caller can change the heap now: a stop-the-world GC, or a lazy sweep
  // ended by the only running mutator. False when a lazy sweep ends while others run.
  bool world_stopped_for_walk() const { return running_ <= 1; }

  const HeapOptions& options() const { return options_; }
  Address base() const { return base_; }
  HeapStats stats() const;
  // Called after every GC (progress output), under the heap mutex: on the collecting thread,
  // or, when a lazy sweep ends, on the mutator whose step ended it while other mutators run
  // (they only touch slots of live objects; Heap::load reads them safely).
  std::function<void(const GcInfo&)> on_gc;

 private:
  Heap(const HeapOptions& options, Profiler* profiler);
  Status init();
  Address try_allocate_locked(std::uint64_t size);
  Address los_allocate(std::uint64_t size);
  void los_free(Address a, std::uint64_t size);
  // What a collection does with the mark-sweep space (the semispace heap always copies).
  enum class Collection : std::uint8_t { kSweep, kCompact };
  Status collect_locked(std::unique_lock<std::mutex>& lk, Collection c = Collection::kSweep);
  // The collection an allocation of `size` bytes that found no room should run now, given the
  // collections it already ran; false: none would help (out of memory).
  bool next_collection(std::uint64_t size, bool swept, bool compacted, Collection& c) const;
  void park_locked(std::unique_lock<std::mutex>& lk);
  void park_slow(Mutator& m);
  Status do_collect(Collection c);
  Status end_gc();
  void visit_all_roots(const RootFn& fn);
  // HeapOptions::mark_frame_roots: Profiler::on_root for every object the mutators' frames hold.
  void mark_frame_roots();
  void collect_semispace(GcInfo& info);
  void mark_marksweep();
  void sweep_los(GcInfo& info);
  // The mark-sweep space's sweep (sweep.cc): start_sweep sets it up after marking; sweep_cells
  // sweeps at least `budget` bytes of it (or the rest) and returns true once it is done.
  void start_sweep();
  bool sweep_cells(std::uint64_t budget);
  // The sweep loop, compiled once with death reports and once without (no profiler): the
  // runs' bookkeeping then costs the unprofiled sweep nothing.
  template <DeathReports kMode>
  bool sweep_cells_loop(std::uint64_t budget);
  template <DeathReports kMode, MoveReports kMoves>
  void walk_from_space(GcInfo& info);
  // The mark-sweep space's allocation (sweep.cc): best fit among the listed gaps, else the
  // bump region; list_free lists a gap (writing its free-cell header).
  Address ms_allocate(std::uint64_t cell);
  void list_free(Address a, std::uint64_t bytes);
  // Sliding compaction of the marked mark-sweep space (compact.cc).
  void compact_marksweep(GcInfo& info);
  void close_run(Address end);
  // kLazySweep: lists the open run now, ending it at the cursor, if it covers `cell` bytes.
  bool list_open_run(std::uint64_t cell);
  // kLazySweep, heap mutex held: one allocation's step, and the rest of the sweep.
  Status sweep_step_locked();
  Status finish_sweep_locked();
  bool test_and_mark(Address a);
  bool test_and_mark_atomic(Address a);
  // Inline: the sweep asks it of every object (out of line, the call made the sweep loop keep
  // its run state on the stack around it).
  bool is_marked(Address a) const {
    const std::uint64_t g = (a - base_) >> 3;
    return (marks_[g >> 6] >> (g & 63)) & 1;
  }
  void mark_serial();
  void mark_parallel();
  // Calls fn(slot) for every reference slot of obj (null or not).
  template <class Fn>
  void for_each_ref_slot(Address obj, Fn&& fn) const;
  std::uint64_t cell_size(std::uint64_t size) const { return (size + 15) & ~std::uint64_t{15}; }
  bool in_los(Address a) const { return a - los_begin_ < los_end_ - los_begin_; }
  // A semispace heap's objects until the next GC: the current half and the large objects
  // beside it, one range (init puts the large objects between the halves).
  Address reachable_begin() const { return std::min(from_begin_, los_begin_); }
  Address reachable_end() const { return std::max(from_end_, los_end_); }
  // FateReports::kSurvivors, kCheaper: where the object at pre-GC address `a` is after
  // this GC, or 0 if it died (the SurvivorOracle the collection hands to report_survivors).
  class Survivors;
  Address survivor_of(Address a) const noexcept;
  std::string oom_message(std::uint64_t size, std::uint32_t type, bool compacted) const;

  HeapOptions options_;
  Profiler* profiler_;
  // The profiler while the GC open now wants each move and free reported (chosen after its
  // gc_begin: Profiler::wants_object_events), else null: the GC then answers report_survivors
  // instead (Survivors, heap.cc), once per tracked object.
  Profiler* events_;
  std::vector<SimType> types_;
  void* memory_ = nullptr;
  Address base_ = 0;
  // Semispace.
  Address from_begin_ = 0, from_end_ = 0, to_begin_ = 0, to_end_ = 0, bump_ = 0;
  // Mark-sweep: [ms_begin_, ms_bump_) is walkable; free cells carry kFreeCellType.
  Address ms_begin_ = 0, ms_end_ = 0, ms_bump_ = 0;
  static constexpr std::uint64_t kSmallClasses = 33;  // 16-byte classes up to 512 bytes
  std::vector<Address> small_free_[kSmallClasses];
  std::multimap<std::uint64_t, Address> large_free_;  // spans > 512 bytes, by size
  // The sweep: [sweep_cursor_, sweep_end_) is still unswept (sweep_end_ is ms_bump_ when the
  // mark ended); sweep_run_ starts the run of free cells it is coalescing, or is 0. Free lists
  // hold only swept cells, and bump allocation starts at or above sweep_end_.
  Address sweep_cursor_ = 0, sweep_end_ = 0, sweep_run_ = 0;
  // With free-range reports: where the dead of the open run that no report covers yet start
  // (reported when the run closes or list_open_run takes it), or 0.
  Address sweep_unreported_ = 0;
  bool sweeping_ = false;  // kLazySweep: between the mark's gc_begin and the sweep's gc_end
  GcInfo gc_;              // the current (or pending) GC's counts and times
  // LOS: page-granular first fit over free spans (addr -> bytes), live objects listed.
  Address los_begin_ = 0, los_end_ = 0;
  SpaceId space_id_ = 0;  // the heap's space in the profiler
  std::map<Address, std::uint64_t> los_free_;
  std::vector<Address> los_objects_;
  std::uint64_t los_live_bytes_ = 0;
  // Mark bitmap over the whole heap, one bit per 8-byte granule.
  std::vector<std::uint64_t> marks_;
  std::vector<Address> mark_stack_;
  // Compaction: live objects of the mark-sweep space in address order and their destinations.
  std::vector<Address> compact_from_, compact_to_;

  std::vector<std::uint64_t> handles_;
  std::vector<RootProvider*> root_providers_;
  std::vector<Mutator*> mutators_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<bool> stop_requested_{false};
  std::uint64_t running_ = 0;  // attached mutators not parked
  HeapStats stats_;
};

template <class Fn>
void Heap::for_each_ref_slot(Address obj, Fn&& fn) const {
  const SimType& t = type_of(obj);
  const std::uint64_t n = slot_count(obj);
  std::uint64_t* s = slots(obj);
  if (t.is_array) {
    if (t.elem_is_ref)
      for (std::uint64_t i = 0; i < n; ++i) fn(s[i]);
  } else {
    for (std::uint64_t i = 0; i < n; ++i)
      if (t.slot_is_ref[i]) fn(s[i]);
  }
}

// "8.0 MiB"
std::string format_bytes(std::uint64_t bytes);
// Parses "64M", "512K", "1G", "12345".
Result<std::uint64_t> parse_size(const std::string& text);

}  // namespace objprof::sim
