// Profiler: the VM-agnostic interface a runtime embeds.
//
// The runtime registers its heap spaces, types, allocation sites and threads, runs the access
// barrier (barrier.h) in its interpreter and compiled code, and calls the hooks below from its
// allocator and collector. The profiler writes a crash-safe trace (trace_format.h) and finds
// stale objects online: a tracked object (size >= min_tracked_size) that no barrier touched
// for stale_after_epochs consecutive GC epochs (GC_K) *and* while its owner, the thread that
// allocated it, allocated stale_after_bytes is reported once as a possible leak. The second
// condition keeps GC frequency and scheduling out of the verdict: a GC storm (many GCs, little
// allocation) ages nothing much, and a thread that made no progress (not scheduled, waiting)
// does not see its working set aged by the others' GCs. A detached thread's objects age on the
// program's clock (every thread's bytes). Reports are grouped by (site, type) (LeakGroup).
//
// Threading and collector contract:
// - attach_thread / detach_thread / on_alloc / on_resize: from mutator threads, concurrently.
//   on_alloc, on_resize and detach_thread are called by the thread that owns the ThreadState.
// - gc_begin(e): from one collector thread while every attached mutator is stopped (a
//   safepoint, or the handshake that ends a concurrent collector's marking): it harvests the
//   accesses of epoch e, so every access of e must have happened before it.
// - on_move / on_move_range / on_free / on_free_range: between gc_begin and gc_end, from any number of
//   collector threads at once. Each object moves at most once per GC; addresses are pre-GC
//   addresses. Objects allocated during a cycle are not moved or freed by that same cycle.
//   A free range never frees what the same GC moves, wherever it stands among the moves: a
//   copying collector reports its evacuated area as one range.
// - gc_end: once every move and free of the cycle has been reported.
// - Collectors that let mutators run inside the bracket (lazy or incremental sweeping, Lua's
//   incremental collector, a CMS sweep; docs/embedding.md): between gc_begin and gc_end the
//   mutators may run, allocate, resize and access objects while frees are reported, and an
//   allocation may reuse memory freed earlier in the same bracket. Objects allocated inside
//   the bracket count in epoch e + 1 (the trace writes them after gc-end(e), the stale tracker
//   stamps them e + 1) and their accesses are accesses of epoch e + 1. Moves need the
//   mutators stopped (they would otherwise access an object at an address the profiler
//   already considers vacated): a concurrently copying collector must report moves at a
//   handshake, or as ranges while no mutator runs. A thread may detach during a bracket. The
//   writer holds the mutators' trace chunks in memory until gc_end (TraceWriter), so keep a
//   bracket as short as the collector's cycle, not open across the program's run.
// - define_type / define_site: any thread, any time before the id is first used.
// - A ThreadState belongs to one OS thread: the first that allocates with it or detaches it
//   (it may be attached by another, e.g. the thread that creates the VM's thread). After
//   detach_thread returns, the ThreadState is gone: the embedder must not use it again.
//
// Misuse (ProtocolError): a collector hook outside gc_begin/gc_end, and an alloc, move or free
// outside every registered space, is always refused (dropped and reported). With check_hooks on, the profiler also keeps a shadow of every live object
// and reports an alloc outside every space or over memory nobody freed, a free or move of an
// address where no live object starts, an object moved or freed twice in one GC, a move onto
// memory still in use, and a ThreadState used by a thread that does not own it.
//
// Minor collections (GcKind::kMinor) do not prove an old object reachable: it may be garbage
// that only a full collection examines. An object is therefore reported only once it is idle
// for stale_after_epochs epochs *and* a full collection (any other kind) has run since its last
// access and left it alive.
//
// Paths from roots: with a HeapWalker (heap_walk.h, ProfilerOptions::heap_walker), the gc_end
// that finds the first stale objects of a (site, type) pair walks the runtime's heap for a
// shortest path from a GC root to one of them (path_search.h), writes it to the trace and
// keeps it for every report of that pair (LeakReport::path). The walk runs inside gc_end, on
// the collector thread, before the leak callbacks; a gc_end that finds no new suspect, or only
// pairs that have a path already, does not call the walker at all.
//
// Epochs: epoch 0 runs from creation to the first gc_begin. The bits of epoch e are harvested
// at gc_begin(e) (mutators are stopped, so the epoch's accesses are complete): the bitmap is
// dumped into the trace, cleared and the thread caches reset; gc_end(e) applies the cycle's
// moves and deaths, resets the caches again (objects moved; a stale cached address could hide
// a new object's first access), runs the stale check and starts epoch e + 1.
#pragma once

#include "objprof/access_bitmap.h"
#include "objprof/barrier.h"
#include "objprof/heap_space.h"
#include "objprof/leak_group.h"
#include "objprof/heap_walk.h"
#include "objprof/path_search.h"
#include "objprof/result.h"
#include "objprof/fate_reports.h"
#include "objprof/survivor_oracle.h"
#include "objprof/thread_state.h"
#include "objprof/trace_format.h"
#include "objprof/trace_sink.h"
#include "objprof/word_masks.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace objprof {

using SpaceId = std::uint32_t;
using GcKind = trace::GcKind;

struct TypeInfo {
  std::uint32_t id = 0;
  std::string name;
  std::uint64_t instance_size = 0;  // bytes; for arrays, the header size
  bool is_array = false;
};

struct SiteInfo {
  // bytecode_offset of a site that is a source location already (method "leak.lua:12"):
  // reports print the method alone instead of "method@offset".
  static constexpr std::uint32_t kNoOffset = 0xFFFF'FFFFu;
  std::uint32_t id = 0;
  std::uint64_t pc = 0;             // return address or bytecode pc; 0 if unknown
  std::string method;               // e.g. "ListLeak.main"
  std::uint32_t bytecode_offset = 0;
};

// How reports name a site: "ListLeak.main bci 12", "leak.lua:12" (kNoOffset), or
// "<unknown method>" for a site the runtime never described.
std::string format_site(std::string_view method, std::uint32_t bytecode_offset);
// How reports name a type: its name, or "<unknown type>" for one the runtime never defined.
inline std::string_view format_type(std::string_view type_name) {
  return type_name.empty() ? std::string_view("<unknown type>") : type_name;
}

// One possible leak, as passed to the leak callback and returned by possible_leaks().
struct LeakReport {
  Address addr = 0;
  std::uint64_t size = 0;
  std::uint32_t type_id = 0;
  std::string_view type_name;
  std::uint32_t site_id = 0;
  std::string_view method;
  std::uint32_t bytecode_offset = 0;
  std::uint64_t last_access_epoch = 0;
  std::uint64_t epoch = 0;  // the epoch whose end detected it
  std::uint64_t idle_bytes = 0;  // its owner thread's bytes allocated since the last access
  // Why it is still alive: a path from a GC root to one stale object of this (site, type)
  // pair (path->steps.back(), at the GC that found it; it may be another object than this
  // one), or null (no heap walker, or no path found yet). Owned by the profiler, valid while
  // it lives.
  const RootPath* path = nullptr;
};

// "objprof: possible leak: ..." — the default callback's line.
std::string format_leak(const LeakReport& report);

// One misuse of the hook protocol (see the contract at the top of this file).
struct ProtocolError {
  std::string_view hook;  // "on_free", "on_move", "on_alloc", "detach_thread", ...
  Address addr = 0;       // the address the hook was given; 0 when it took none
  std::uint64_t epoch = 0;
  std::string message;    // one line: "objprof: protocol error in on_free(0x...): ..."
};

// True when the environment variable OBJPROF_CHECK_HOOKS is set to anything but "" or "0":
// the default of ProfilerOptions::check_hooks, so a test suite or a user can turn the checks
// on without rebuilding the runtime.
bool check_hooks_from_environment() noexcept;

struct ProfilerOptions {
  // GC_K: epochs without an access before a tracked object is reported.
  std::uint32_t stale_after_epochs = 4;
  // The second condition: bytes the object's owner thread allocated since its last access
  // (counted from the end of that access's epoch). 0: GC_K alone. kAutoStaleBytes: as much as
  // the owner allocated in its busiest epoch so far (the program's busiest epoch for a detached
  // thread's objects). K ordinary epochs exceed that; a storm of short epochs (a heap that
  // collects far more often than usual) or a thread that made no progress does not. A thread
  // that allocated a lot in one epoch early on (loading) has its objects judged by that.
  static constexpr std::uint64_t kAutoStaleBytes = ~std::uint64_t{0};
  std::uint64_t stale_after_bytes = kAutoStaleBytes;
  // on_alloc marks the new object in the current epoch's bitmap, as its first barrier would.
  // Barrier elimination may then treat an allocation as the object's first access
  // (ir::ElimOptions::allocation_marks, `objprof elim --assume=allocation-marks`): a JIT that
  // compiled with that assumption needs this on, or the object's first epoch loses its mark.
  bool mark_on_alloc = false;
  // How on_alloc marks: as the runtime's barriers do, so that an allocation's mark is exactly as
  // safe as its first barrier's would have been, at that barrier's price. The default loses no
  // mark but pays a locked instruction per allocation (a new object's bit is always clear):
  // ~6 ns, 4 % of a JIT run of listleak (docs/results.md, issue 13 "Part 5"). kRacy and
  // kRacyTestFirst lose what those barriers lose: a mark of the same bitmap byte (64 bytes of
  // heap) by another thread at the same moment. kBuffered collects the bits in the allocating
  // thread's PendingMarks (pending_marks.h): none lost, one fetch-or per 64 granules allocated
  // into, and the live bitmap shows them at the next gc_begin.
  MarkMode mark_on_alloc_mode = MarkMode::kAtomicTestFirst;
  // Objects at least this large are tracked for staleness (seed 001: leaks worth finding are
  // large objects; every object is still recorded in the trace and marked by the barrier).
  std::uint64_t min_tracked_size = 256;
  // Where the trace goes: a sink, or a file path, or neither (no trace).
  std::unique_ptr<ChunkSink> trace_sink;
  std::string trace_path;
  std::size_t chunk_payload = trace::kDefaultChunkPayload;
  // Called at gc_end, on the collector thread, once per (site, type) group that has newly stale
  // objects, highest score first, with the group's state at that GC (every stale object of it,
  // LeakGroup::new_objects of them new).
  std::function<void(const LeakGroup&)> on_leak_group;
  // Called once per newly stale object (the per-object view), after on_leak_group.
  std::function<void(const LeakReport&)> on_leak;
  // With neither callback set: one line per group (format_leak_group) on stderr.
  bool default_leak_printer = true;
  // Debug checks of the hook protocol against a shadow of every live object (16 bytes per
  // object and a merge per GC: meant for tests and for debugging an embedding).
  bool check_hooks = check_hooks_from_environment();
  // Called for every misuse, on the thread that found it (collector hooks: inside gc_end).
  // Default: the message on stderr, then abort() when check_hooks is on (a debug check stops
  // at the first mistake), or go on without the refused event when it is off.
  std::function<void(const ProtocolError&)> on_protocol_error;
  // Paths from roots to suspected leaks (see the top of this file): the runtime's heap walker,
  // or null for none. It must outlive the profiler.
  HeapWalker* heap_walker = nullptr;
  // The budget of each search (objects visited, depth): it bounds the pause a search adds.
  PathSearchOptions path_search;
  // Searches of one (site, type) pair that find no path before the profiler stops trying
  // (a pair whose objects lie beyond the budget would otherwise cost a search at every GC);
  // 0: never search.
  std::uint32_t path_attempts = 3;
  // How the tracker learns the tracked objects' fates: the hooks, or the collector's own answers
  // (report_survivors with a SurvivorOracle: survivor_oracle.h), always or when cheaper. With
  // the survivors a GC costs the profiler nothing per moved or dead object, and one question per
  // tracked object.
  FateReports fate_reports = FateReports::kHooks;
};

struct ProfilerStats {
  std::uint64_t epoch = 0;
  std::uint64_t objects_allocated = 0;
  std::uint64_t bytes_allocated = 0;
  std::uint64_t objects_tracked = 0;     // ever tracked (size >= threshold, in a space)
  std::uint64_t tracked_live = 0;        // tracked and not yet freed
  std::uint64_t leaks_reported = 0;
  std::uint64_t stale_bytes_threshold = 0;  // the second condition's bytes at the latest check
                                            // (automatic: the program's busiest epoch)
  std::uint64_t barriers_executed = 0;   // counters: only with a counting barrier policy
  std::uint64_t barrier_cache_hits = 0;
  std::uint64_t bitmap_marks = 0;
  std::uint64_t bits_harvested = 0;      // marked granules over all epochs
  std::uint64_t moves = 0, frees = 0;
  std::uint64_t free_ranges = 0;         // on_free_range calls
  std::uint64_t root_marks = 0;          // on_root calls that marked
  std::uint64_t trace_bytes = 0, trace_chunks = 0, trace_chunks_lost = 0;
  std::uint64_t tracker_bytes = 0;       // memory of the stale tracker's table, and of the record
                                         // buffers it holds for the threads between GCs
  std::uint64_t threads_attached = 0;    // ThreadStates alive now (detached ones are freed)
  std::uint64_t threads_detached = 0;    // detach_thread calls so far
  std::uint64_t protocol_errors = 0;     // ProtocolErrors reported so far
  std::uint64_t path_searches = 0;       // heap walks for paths from roots
  // Tracked objects found at a start that another live tracked object had claimed, resolved by
  // keeping the later one: memory reused without a reported free, or two objects moved to one
  // place. Each is a protocol slip (check_hooks reports them as ProtocolErrors as they happen).
  std::uint64_t reused_starts = 0;
  // GCs the stale tracker applied through its index of every record instead of its one pass
  // over them: range moves it could not card, moves into another space, reused starts, or side
  // bits that could not be mapped. A cost signal: a runtime whose collections all come here
  // pays a lookup per record and event (docs/embedding.md, section 2).
  std::uint64_t tracker_indexed_gcs = 0;
  // GCs the stale tracker applied by their runs of moves alone (a copying collector's runs and
  // lone moves, with one evacuated range as its deaths): each run's records found as one slice
  // of the records in address order, the dead never visited (docs/embedding.md, section 2).
  std::uint64_t tracker_run_gcs = 0;
  // GCs whose fates came from report_survivors (FateReports::kSurvivors, kCheaper).
  std::uint64_t survivor_gcs = 0;
};

namespace internal {
class StaleTracker;
struct ProfilerState;
// One collector thread's event counts (ProfilerStats::moves, frees, free_ranges, root_marks),
// summed at gc_end.
struct CollectorCounts {
  std::uint64_t moves_seen = 0, frees_seen = 0, free_ranges_seen = 0, roots_seen = 0;
  std::uint64_t moves_carded = 0;  // tracked objects' moves written into the move cards (on_move)
};
// The calling thread's counts for the profiler it last served as a collector (its instance
// number: a new profiler at a reused address has another), so that the collector hooks' short
// paths, inlined into the runtime's collector, count an event with one compare and one add.
struct CollectorThreadCache {
  std::uint64_t instance = 0;
  CollectorCounts* counts = nullptr;
};
extern constinit thread_local CollectorThreadCache collector_cache;
// Whether the calling thread's cache holds profiler `instance`'s counts: the one check behind
// every collector hook's counts (Profiler::collector_counts and its out-of-line paths). A bool,
// not the pointer: a hook then branches on the compare alone (counts is never null with it).
inline bool cache_holds(std::uint64_t instance) noexcept { return collector_cache.instance == instance; }
}  // namespace internal

class Profiler {
 public:
  static Result<std::unique_ptr<Profiler>> create(ProfilerOptions options);
  ~Profiler();
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  // Spaces must be added before the first thread, type, site or GC (the trace header lists
  // them). Bitmap memory from mmap, or from the embedder (e.g. a shared segment).
  Result<SpaceId> add_space(const HeapSpace& space);
  Result<SpaceId> add_space(const HeapSpace& space, AccessBitmap::ExternalBuffers buffers);
  std::size_t space_count() const noexcept;
  // The runtime uses only the first `bytes` of the space so far (reserved large, filled from
  // its start): harvests scan only that part of its bitmap (AccessBitmap::set_used). Grow it
  // before placing an object beyond it; after the first call it never shrinks. Any thread.
  void set_space_used(SpaceId id, std::uint64_t bytes) { bitmap(id).set_used(bytes); }
  // The window's other end (AccessBitmap::set_used_from): no object starts below `offset`
  // bytes into the space yet. Lower it before placing an object below it. Any thread.
  void set_space_used_from(SpaceId id, std::uint64_t offset) { bitmap(id).set_used_from(offset); }
  // The whole window, [from, end) bytes into the space, narrowed or moved as well as widened
  // (AccessBitmap::set_window): a semispace collector declares the half it copied into (and
  // whatever else its mutators reach, such as a large-object space next to it), so harvests
  // skip the other half. Only inside a GC bracket, before the mutators run again: the epoch
  // that follows must mark only inside the window (with hook checks a mark outside it is
  // reported at the next gc_begin, and dropped). Errors: an unknown space, from > end or end
  // past the space, or a call outside gc_begin/gc_end.
  Status set_space_window(SpaceId id, std::uint64_t from, std::uint64_t end);
  AccessBitmap& bitmap(SpaceId id);
  const BarrierDescriptor& barrier_descriptor(SpaceId id) { return bitmap(id).descriptor(); }

  Status define_type(const TypeInfo& type);
  Status define_site(const SiteInfo& site);

  // Thread ids must be unique among attached threads. detach_thread flushes the thread's
  // trace buffer, hands its counters and pending objects to the profiler and frees the
  // ThreadState, so a runtime that starts a thread per request does not grow.
  Result<ThreadState*> attach_thread(std::uint32_t id, std::string name);
  void detach_thread(ThreadState& thread);

  // --- allocator hook (mutator thread, fast path) ---
  void on_alloc(ThreadState& thread, std::uint32_t site, std::uint32_t type, Address addr, std::uint64_t size) {
    // One compare for the usual single space; the checks, other layouts and misses go slow.
    if (slow_alloc_ || !in_the_space(addr, size)) [[unlikely]] {
      if (!check_alloc(thread, addr, size)) return;
    }
    bump(thread.allocated_bytes, size);
    bump(thread.allocated_objects);
    if (mark_on_alloc_) {
      // The only space's bitmap inline; the object is in it (checked above).
      if (space_desc_)
        mark_allocated(thread, space_desc_->bitmap.load(std::memory_order_relaxed),
                       (addr - space_begin_) >> space_desc_->log2_granule);
      else
        mark_allocated_in_spaces(thread, addr);
    }
    if (EventBuffer* b = thread.buffer()) b->alloc(site, type, addr, size);
    if (size >= min_tracked_size_) track_alloc(thread, site, type, addr, size);
  }

  // on_alloc's inline short path alone: true if it applied and the object is reported (no hook
  // checks, no trace, no marks at allocation, [addr, addr + size) inside the only space, and
  // size below min_tracked_size: the allocation is counted and nothing else is kept, so its
  // site and type are not needed); false, with nothing done, otherwise: then call on_alloc. A
  // runtime whose own hook is inline can skip looking up the site of most objects this way (the
  // Lua embedding: docs/embedding.md), as on_free_if_inline does for frees.
  bool on_alloc_if_inline(ThreadState& thread, Address addr, std::uint64_t size) noexcept {
    if (size >= inline_alloc_below_ || !in_the_space(addr, size)) [[unlikely]] return false;
    bump(thread.allocated_bytes, size);
    bump(thread.allocated_objects);
    return true;
  }

  // The object at addr (given to on_alloc) now holds `bytes` in all: its header plus the parts
  // the runtime allocates for it separately (a table's array and hash part, a thread's stack).
  // Its address range does not change. The trace records it and the stale tracker ranks the
  // object by it: an object that reaches min_tracked_size this way is tracked from now on,
  // under `site` and `type` (the runtime's allocation site if it knows it, else the site that
  // grew the object; the offline analyzer always reports the allocation site). Footprints below
  // the threshold are not passed to the tracker, so a tracked object that shrinks below it keeps
  // its last tracked footprint.
  void on_resize(ThreadState& thread, Address addr, std::uint64_t bytes, std::uint32_t site, std::uint32_t type) {
    if (slow_alloc_ || !in_the_space(addr, 0)) [[unlikely]] {
      if (!check_resize(thread, addr)) return;
    }
    if (EventBuffer* b = thread.buffer()) b->resize(addr, bytes);
    if (bytes >= min_tracked_size_) track_resize(thread, addr, bytes, site, type);
  }
  // Footprints from this size on matter to the stale tracker (an embedder may skip looking up
  // the site of a smaller one: on_resize ignores it).
  std::uint64_t min_tracked_size() const noexcept { return min_tracked_size_; }

  // --- collector hooks ---
  // The usual move, free and free range (no hook checks, no trace, one space, inside the
  // bracket) of an object the stale tracker does not track is counted inline, with one bit
  // test of the tracker's start bits (a copying or sweeping collector calls them once per
  // object, and most objects are not tracked); everything else goes out of line.
  Status gc_begin(GcKind kind);
  // on_move's every way out is a tail call (a thread's first move for this profiler goes the
  // long way, which fills its cache), so a copying collector's loop keeps no frame for it: with
  // the cache's miss a call that returned, listleak-semispace's moves cost 6 instructions more
  // each. (The sweeps' on_free and on_free_range measured no cheaper that way.)
  void on_move(Address from, Address to) {
    if (const std::uint64_t* starts = short_hook_starts()) [[likely]] {
      const Address off = from - space_begin_;
      // The cache's compare alone (its counts are never null when it holds this profiler's).
      if (internal::cache_holds(instance_) && off < space_bytes_ && to - space_begin_ < space_bytes_) [[likely]] {
        internal::CollectorCounts& counts = *internal::collector_cache.counts;
        ++counts.moves_seen;
        if (tracked_start(starts, off)) move_tracked(counts, starts, from, to);
        return;
      }
    }
    move_traced(from, to);
  }
  void on_move_range(Address from, Address to, std::uint64_t bytes);
  void on_free(Address addr) {
    if (const std::uint64_t* starts = short_hook_starts()) [[likely]] {
      const Address off = addr - space_begin_;
      if (off < space_bytes_) [[likely]] {
        internal::CollectorCounts& counts = collector_counts();
        ++counts.frees_seen;
        if (tracked_start(starts, off)) log_free(counts, addr);
        return;
      }
    }
    free_traced(addr);
  }
  // on_free's inline short path alone: true if it applied (a bracket is open, no hook checks,
  // no trace, one space, addr inside it) and the free is reported; false, with nothing done,
  // otherwise. A runtime that hands its frees over in batches (on_free_batch) to pay one call
  // per batch rather than per object can report each free here first and batch only those
  // that return false (the Lua embedding: docs/embedding.md).
  bool on_free_if_inline(Address addr) {
    const std::uint64_t* starts = short_hook_starts();
    const Address off = addr - space_begin_;
    if (starts == nullptr || off >= space_bytes_) [[unlikely]] return false;
    internal::CollectorCounts& counts = collector_counts();
    ++counts.frees_seen;
    if (tracked_start(starts, off)) log_free(counts, addr);
    return true;
  }
  // The objects at `addrs` died: the same as one on_free per address, in this order, in one
  // call. A sweep that frees objects one at a time (a free-list heap's, like Lua's) can hand
  // them over in batches and pay the hook's fixed cost once per batch. The embedder reports a
  // batch before any of its memory is reused (before the next allocation), and before gc_end.
  void on_free_batch(std::span<const Address> addrs);
  // Every object that starts in [addr, addr + bytes) died, except those this GC moves
  // (on_move, on_move_range, reported before or after the range): a sweep's run of dead cells
  // in one call (and one 17-byte trace record) instead of one on_free per object, or a copying
  // collector's whole evacuated area, which it then need not walk for its dead. The range lies
  // in one space and may cover free memory too; it must not cut an object that stays in two
  // (the hook checker says so). bytes == 0 is a no-op.
  void on_free_range(Address addr, std::uint64_t bytes) {
    if (const std::uint64_t* starts = short_hook_starts()) [[likely]] {
      const Address off = addr - space_begin_;
      if (at_in_the_space(off, bytes) && bytes != 0) [[likely]] {
        internal::CollectorCounts& counts = collector_counts();
        ++counts.free_ranges_seen;
        if (!untracked_range(starts, off, bytes)) log_free_range(counts, starts, addr, bytes);
        return;
      }
    }
    free_range_traced(addr, bytes);
  }
  // Root marks (ir::ElimOptions::roots_marked, `objprof elim --assume=root-marks`): a collector
  // that promises them calls this for every object a mutator frame's live reference slot holds,
  // at the object's post-GC address, between gc_begin and gc_end and before the mutators resume.
  // The object is marked in the epoch this GC starts, as a barrier would mark it, so code
  // compiled under that model may keep a register's availability across GC points. An object
  // held by a frame then counts as accessed at every GC (docs/elimination.md). Statics and
  // handles are not frames: marking them would hide what a static structure leaks. Several
  // collector threads may call it at once.
  void on_root(Address addr);
  // With FateReports::kSurvivors, or kCheaper in a GC whose wants_object_events() is false:
  // the fates of this GC's tracked objects (every object the tracker tracked when gc_begin
  // returned), asked of `oracle` in batches at their pre-GC addresses. Call it once per GC,
  // between gc_begin and gc_end, from one collector thread while no other collector hook runs,
  // once the collector knows every object's fate and before any dead object's memory is
  // reused: after marking (a mark-sweep collector, before its sweep; a lazy or incremental one,
  // before its first sweep step), after copying (a copying or compacting one, while its
  // forwarding information is still there). In a GC that takes the hooks' reports instead
  // (wants_object_events() true) it asks nothing. Misuse (FateReports::kHooks, outside the
  // bracket, twice in one GC, a survivor outside every space) is a ProtocolError; a GC that
  // needed it and reaches gc_end without it reports one too, and its tracked objects keep
  // their places.
  void report_survivors(const SurvivorOracle& oracle);
  // Whether the collector must report each move and free of the GC open now (ask after
  // gc_begin; the answer holds until gc_end): always with FateReports::kHooks, a trace (it
  // records every move and death) or the hook checks (their shadow of the heap follows every
  // event); never otherwise with kSurvivors; chosen per GC with kCheaper. When false, the GC's
  // fates come from report_survivors alone, and hooks called anyway are only counted.
  bool wants_object_events() const noexcept { return wants_object_events_.load(std::memory_order_relaxed); }
  Status gc_end();

  // Flushes every buffer, writes the end record and syncs the trace. Idempotent. Called by
  // the destructor if the embedder did not. A GC bracket still open is ended first (gc_end).
  Status finish();

  std::uint64_t epoch() const noexcept { return epoch_.load(std::memory_order_acquire); }
  bool in_gc() const noexcept { return in_gc_.load(std::memory_order_acquire); }
  const ProfilerOptions& options() const noexcept { return options_; }
  ProfilerStats stats() const;
  // Tracked objects that are stale now (at the last completed epoch), most stale bytes first
  // (size x idle epochs), then by address. It writes nothing the profiler shares, but reads
  // the tracker: call it while no hook runs (at a safepoint, or after the mutators stop).
  std::vector<LeakReport> possible_leaks() const;
  // The same objects grouped by (site, type), highest score first.
  std::vector<LeakGroup> possible_leak_groups() const;
  // First trace write error, if any.
  Status trace_status() const;
  // First ProtocolError, if any, as a kProtocol error with its message.
  Status protocol_status() const;

 private:
  explicit Profiler(ProfilerOptions options);
  Result<SpaceId> add_space_impl(const HeapSpace& space, const AccessBitmap::ExternalBuffers* buffers);
  void track_alloc(ThreadState& thread, std::uint32_t site, std::uint32_t type, Address addr, std::uint64_t size);
  // The collector hooks' out-of-line paths: logging an event the stale tracker may need (a
  // tracked object may start there), and the hooks with every check and the trace.
  // `counts`: the calling thread's (collector_counts, or the cache's when cache_holds).
  void log_move(internal::CollectorCounts& counts, Address from, Address to);
  // on_move's short path for a tracked object: its move goes into the tracker's cards where it
  // can (StaleTracker::card_move), else into the log. Out of line, so that the inline path of
  // the moves of untracked objects, most of a copying collector's, keeps no registers to save.
  // `starts`: the only space's start bits, as for log_free_range. card_or_log_move is its body,
  // inlined into move_traced too.
  void move_tracked(internal::CollectorCounts& counts, const std::uint64_t* starts, Address from, Address to);
  void card_or_log_move(internal::CollectorCounts& counts, const std::uint64_t* starts, Address from, Address to);
  void log_free(internal::CollectorCounts& counts, Address addr);
  // `starts`: the only space's start bits (short_hook_starts or traced_hook_starts).
  void log_free_range(internal::CollectorCounts& counts, const std::uint64_t* starts, Address addr, std::uint64_t bytes);
  // With a trace (and no hook checks, one space), inside the bracket: the trace record, the
  // count and the log entry, without the checks repeated; everything else goes on to the
  // *_in_full paths.
  void move_traced(Address from, Address to);
  // move_traced's way for a tracked object (the buffer's room checked), out of line.
  void move_traced_tracked(internal::CollectorCounts& counts, EventBuffer& b, const std::uint64_t* starts, Address from,
                           Address to);
  void free_traced(Address addr);
  void free_range_traced(Address addr, std::uint64_t bytes);
  // The same once the caller's buffer may need a flush or a first use (their fast paths make
  // no call, so they keep no registers to save, and hand anything else over to these).
  void move_traced_slow(Address from, Address to);
  void free_traced_slow(Address addr);
  void move_in_full(Address from, Address to);
  void free_in_full(Address addr);
  void free_range_in_full(Address addr, std::uint64_t bytes);
  std::uint32_t intern_pair(ThreadState& thread, std::uint32_t site, std::uint32_t type);
  bool check_resize(ThreadState& thread, Address addr);
  void track_resize(ThreadState& thread, Address addr, std::uint64_t bytes, std::uint32_t site, std::uint32_t type);
  std::uint32_t size_granules(std::uint64_t size) const noexcept;
  std::uint32_t birth_epoch() const noexcept;
  void write_thread_end(std::uint32_t id);
  void write_header_once();
  bool check_alloc(ThreadState& thread, Address addr, std::uint64_t size);
  bool mark_object(Address addr) noexcept;
  // on_alloc's mark in ProfilerOptions::mark_on_alloc_mode: a switch on a member that never
  // changes, which predicts perfectly.
  OBJPROF_ALWAYS_INLINE void mark_allocated(ThreadState& thread, std::uint8_t* base, std::uint64_t granule) noexcept {
    switch (mark_on_alloc_mode_) {
      case MarkMode::kRacy:
        AccessBitmap::mark_granule<MarkMode::kRacy>(base, granule);
        return;
      case MarkMode::kRacyTestFirst:
        AccessBitmap::mark_granule<MarkMode::kRacyTestFirst>(base, granule);
        return;
      case MarkMode::kAtomic:
        AccessBitmap::mark_granule<MarkMode::kAtomic>(base, granule);
        return;
      case MarkMode::kBuffered:
        thread.pending_marks.mark(base, granule);
        return;
      case MarkMode::kAtomicTestFirst:
        break;
    }
    AccessBitmap::mark_granule<MarkMode::kAtomicTestFirst>(base, granule);
  }
  // The same with several spaces: the one holding addr (check_alloc found it).
  void mark_allocated_in_spaces(ThreadState& thread, Address addr) noexcept;
  // [addr, addr + bytes) inside the only space (false with several spaces or none).
  bool in_the_space(Address addr, std::uint64_t bytes) const noexcept {
    return at_in_the_space(addr - space_begin_, bytes);
  }
  // The same for `off` = addr - the space's begin (a hook that needs the offset anyway).
  bool at_in_the_space(Address off, std::uint64_t bytes) const noexcept {
    return off < space_bytes_ && bytes <= space_bytes_ - off;
  }
  // [addr, addr + bytes) inside one registered space (the trace reader refuses anything else).
  // One compare for the usual single space (the collector hooks ask it per object).
  bool in_spaces(Address addr, std::uint64_t bytes) const noexcept {
    return in_the_space(addr, bytes) || in_other_spaces(addr, bytes);
  }
  bool in_other_spaces(Address addr, std::uint64_t bytes) const noexcept;
  // The stale tracker's start bits of the only space while a bracket is open and the plain
  // collector hooks apply (no hook checks, no trace, one space), else null: the hooks' short
  // paths. The bits change only outside brackets and at gc_begin/gc_end, so collector
  // threads read them without synchronisation inside the bracket.
  const std::uint64_t* short_hook_starts() const noexcept { return short_hook_starts_.load(std::memory_order_relaxed); }
  // The stale tracker's move cards while a bracket is open, the hooks' short paths (plain or
  // traced) apply and the tracker can use cards this GC (StaleTracker::hooks_may_card), else null.
  std::uint32_t* short_hook_cards() const noexcept { return short_hook_cards_.load(std::memory_order_relaxed); }
  // Whether a tracked object may start at `off` bytes into the only space. The bit first: it is
  // clear for most objects (untracked), and an address inside a granule is rare.
  bool tracked_start(const std::uint64_t* starts, Address off) const noexcept {
    const std::uint64_t g = off >> space_log2_granule_;
    return ((starts[g >> 6] >> (g & 63)) & 1) != 0 && (off & granule_mask_) == 0;
  }
  // No tracked object starts in [off, off + bytes) (inside the only space), as far as one word
  // of the bits says (a sweep's run of dead cells, usually); false for longer ranges, which
  // log_free_range looks at whole.
  bool untracked_range(const std::uint64_t* starts, Address off, std::uint64_t bytes) const noexcept {
    const std::uint64_t g0 = (off + granule_mask_) >> space_log2_granule_;  // the granules starting inside
    const std::uint64_t g1 = (off + bytes + granule_mask_) >> space_log2_granule_;
    if (g0 >= g1) return true;
    if ((g0 >> 6) != ((g1 - 1) >> 6)) return false;
    return (starts[g0 >> 6] & internal::head_mask(g0) & internal::tail_mask(g1)) == 0;
  }
  internal::CollectorCounts& collector_counts() noexcept {
    if (!internal::cache_holds(instance_)) [[unlikely]] return collector_counts_slow();
    return *internal::collector_cache.counts;
  }
  internal::CollectorCounts& collector_counts_slow();
  void protocol_error(std::string_view hook, Address addr, std::string what);

  ProfilerOptions options_;
  std::uint64_t min_tracked_size_;
  bool check_hooks_;
  bool mark_on_alloc_;
  MarkMode mark_on_alloc_mode_;
  // Set once, when the spaces freeze (write_header_once, before any thread is attached).
  bool slow_alloc_ = true;
  // on_alloc_if_inline applies below this size: min_tracked_size_ with one space and neither
  // hook checks, a trace nor marks at allocation; 0 (never) otherwise.
  std::uint64_t inline_alloc_below_ = 0;
  // No hook checks, no trace: a collector hook inside the bracket and the only space
  // (in_the_space) counts its event and asks the tracker's filter, nothing else (once per
  // object per GC).
  bool plain_collector_hooks_ = false;
  // wants_object_events(), chosen at gc_begin; and whether this profiler always wants them.
  std::atomic<bool> wants_object_events_{true};
  bool always_object_events_ = true;
  Address space_begin_ = 0;
  std::uint64_t space_bytes_ = 0;
  const BarrierDescriptor* space_desc_ = nullptr;  // the only space's, for mark_on_alloc
  std::uint32_t space_log2_granule_ = 3;           // the only space's granule, for track_alloc
  std::uint64_t granule_mask_ = 7;                 // and its alignment mask
  // The stale tracker's start bits of the only space, with plain collector hooks; else null.
  const std::uint64_t* tracked_starts_ = nullptr;
  // tracked_starts_ from gc_begin to gc_end (short_hook_starts); traced_hook_starts_ the same
  // for the hooks with a trace and no hook checks (move_traced, free_traced).
  std::atomic<const std::uint64_t*> short_hook_starts_{nullptr};
  std::atomic<const std::uint64_t*> traced_hook_starts_{nullptr};
  // The tracker's move cards (StaleTracker::hook_cards) for the hooks' short paths (plain or
  // traced), else null; short_hook_cards_: the same from gc_begin to gc_end in GCs that may
  // card moves.
  std::uint32_t* tracked_cards_ = nullptr;
  std::atomic<std::uint32_t*> short_hook_cards_{nullptr};
  const std::uint64_t* traced_starts_ = nullptr;
  std::uint64_t instance_ = 0;  // internal::ProfilerState::instance
  std::atomic<std::uint64_t> epoch_{0};
  std::atomic<bool> in_gc_{false};
  std::unique_ptr<internal::ProfilerState> state_;
};

}  // namespace objprof
