// Profiler slow paths: registration, GC bracketing, trace records that are not hot, and the
// online stale check.
#include "objprof/profiler.h"

#include "objprof/trace_writer.h"
#include "hook_checker.h"
#include "leak_groups.h"
#include "progress_clock.h"
#include "leak_paths.h"
#include "stale_tracker.h"

#include <fmt/core.h>
#include <tbb/concurrent_hash_map.h>
#include <tbb/concurrent_unordered_map.h>
#include <tbb/concurrent_vector.h>
#include <tbb/enumerable_thread_specific.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string_view>
#include <thread>
#include <unordered_map>

namespace objprof {

ThreadState::~ThreadState() = default;
void ThreadState::set_buffer(std::unique_ptr<EventBuffer> buffer) noexcept { buffer_ = std::move(buffer); }

namespace internal {

// A ThreadState's clocks and barrier counters, summed over threads (ProfilerStats).
struct ThreadTotals {
  std::uint64_t bytes = 0, objects = 0, barriers = 0, cache_hits = 0, marks = 0;
  void add(const ThreadState& t) {
    bytes += t.allocated_bytes.load(std::memory_order_relaxed);
    objects += t.allocated_objects.load(std::memory_order_relaxed);
    barriers += t.counters.executed.load(std::memory_order_relaxed);
    cache_hits += t.counters.cache_hits.load(std::memory_order_relaxed);
    marks += t.counters.marks.load(std::memory_order_relaxed);
  }
};

// What one collector thread logs during a GC cycle.
// Its counts (every event, for ProfilerStats) come first: the hooks' inline paths reach them
// through collector_cache.
struct CollectorLocal : CollectorCounts {
  std::unique_ptr<EventBuffer> buffer;
  // Only events the stale tracker's region filter lets through (may concern a record).
  std::vector<MoveLog> moves;
  std::vector<RangeMoveLog> ranges;
  std::vector<Address> frees;
  std::vector<FreeRangeLog> free_ranges;
};

constinit thread_local CollectorThreadCache collector_cache{};

// What a tracked record's site_type names.
struct PairKey {
  std::uint32_t site = 0, type = 0, owner = 0;  // owner: a ProgressClocks slot
  bool operator==(const PairKey&) const = default;
  struct HashCompare {
    static std::size_t hash(const PairKey& k) noexcept {
      return static_cast<std::size_t>(((std::uint64_t{k.site} << 32 | k.type) ^ (std::uint64_t{k.owner} << 17)) *
                                      0x9E3779B97F4A7C15ull);
    }
    static bool equal(const PairKey& a, const PairKey& b) noexcept { return a == b; }
  };
};

struct ProfilerState {
  std::vector<HeapSpace> spaces;
  std::vector<std::unique_ptr<AccessBitmap>> bitmaps;
  std::once_flag header_once;
  std::atomic<bool> frozen{false};

  std::unique_ptr<TraceWriter> writer;
  std::mutex control_mutex;  // guards control (definitions are rare; GC records are single-threaded)
  std::unique_ptr<EventBuffer> control;

  tbb::concurrent_unordered_map<std::uint32_t, TypeInfo> types;
  tbb::concurrent_unordered_map<std::uint32_t, SiteInfo> sites;
  // Distinguishes this profiler from earlier ones at the same address in the collector
  // threads' cached pointers to their CollectorLocal (see collector_local).
  const std::uint64_t instance = next_instance();
  static std::uint64_t next_instance() {
    static std::atomic<std::uint64_t> n{0};
    return n.fetch_add(1, std::memory_order_relaxed) + 1;
  }
  // Interned (site, type, owner clock) triples: the tracker stores one 32-bit index for all three.
  tbb::concurrent_hash_map<PairKey, std::uint32_t, PairKey::HashCompare> pair_index;
  tbb::concurrent_vector<PairKey> pairs;
  ProgressClocks clocks;
  std::uint64_t stale_bytes = 0;  // the second condition's threshold at the latest check

  std::shared_mutex threads_mutex;  // attach/detach (rare) vs GC iteration
  std::vector<std::unique_ptr<ThreadState>> threads;  // attached threads only
  // What detached (and freed) threads left behind, under threads_mutex: their clocks and
  // counters, and tracked objects the next gc_begin has not added yet.
  ThreadTotals retired;
  std::uint64_t retired_threads = 0;
  std::vector<PendingTracked> orphaned_tracked;
  std::vector<TrackedRecord> orphaned_records;
  std::vector<TrackedRecord> orphaned_claimed;  // their starts claimed at allocation

  std::unique_ptr<HookChecker> checker;  // only with ProfilerOptions::check_hooks
  mutable std::mutex protocol_mutex;
  std::uint64_t protocol_errors = 0;
  std::optional<Error> first_protocol_error;

  // The first collector thread's log, outside `collectors`, and that thread: a runtime whose GCs
  // run on one thread never creates the per-thread table, whose first local() allocated a table
  // and a slot inside the profiler's first GC (~1.5 K instructions: a tenth of the profiler's
  // share of a small collection, scimark-marksweep, docs/results.md). Other collector threads
  // get their slots in `collectors`. A thread id is reused only after its thread ended, and a
  // thread that ended writes no log.
  CollectorLocal first_collector;
  std::atomic<std::thread::id> first_collector_owner{};
  tbb::enumerable_thread_specific<CollectorLocal> collectors;
  // fn(log) for every collector thread's log, the first thread's first.
  template <class Fn>
  void each_collector(Fn&& fn) {
    fn(first_collector);
    for (CollectorLocal& local : collectors) fn(local);
  }

  StaleTracker tracker;
  LeakPaths paths;  // with ProfilerOptions::heap_walker: paths from roots per (site, type)
  // The epoch's access bits, per space, from gc_begin's harvest to gc_end, where the tracker
  // applies them in its one pass, with the runs of marked words that clear each buffer afterwards.
  // Declared after `bitmaps`: a snapshot must not outlive its bitmap, and members are destroyed
  // in reverse order.
  std::vector<std::optional<BitmapSnapshot>> held_bits;
  std::vector<std::vector<BitmapSnapshot::MarkedRun>> held_runs;
  std::vector<const BitmapSnapshot*> held_bit_ptrs;  // scratch for gc_end
  std::vector<MoveLog> gc_moves;                               // scratch for gc_end
  std::vector<RangeMoveLog> gc_ranges;
  std::vector<Address> gc_frees;
  std::vector<FreeRangeLog> gc_free_ranges;
  std::vector<PendingResize> gc_resizes;
  std::vector<std::pair<std::uint32_t, std::uint64_t>> gc_clock_values;  // gc_begin's (clock slot, bytes) per thread
  // report_survivors' findings for gc_end, in place of the collector threads' logs: the dead,
  // the moved that did not go into the cards, and how many did. `survivors_this_gc`: the GC
  // open now takes them (wants_object_events() is false).
  bool survivors_this_gc = false, survivors_reported = false;
  // This GC's hooks log their moves instead of carding them (StaleTracker::take_runs_this_gc).
  bool runs_logged = false;
  std::uint64_t objects_at_gc = 0;  // objects allocated before the latest gc_begin (all threads)
  std::vector<Address> survivor_frees;
  std::vector<MoveLog> survivor_moves;
  std::uint64_t survivor_carded = 0;
  // report_survivors' scratch: one batch of pre-GC addresses and their answers (kSurvivorBatch
  // each), whatever the number of tracked objects.
  std::vector<Address> survivor_asked, survivor_answers;
  std::vector<PendingResize> orphaned_resizes;  // of detached threads, under threads_mutex
  // Under control_mutex: a GC bracket is open (mutator chunks are held), and the thread-end
  // records of threads detached during it, written after the held chunks at gc_end.
  bool in_bracket = false;
  GcKind gc_kind = GcKind::kFull;   // of the bracket open now (or last)
  std::uint64_t full_gc_after = 0;  // one past the epoch of the latest non-minor GC; 0: none yet
  std::vector<std::uint32_t> deferred_thread_ends;
  std::atomic<std::uint64_t> objects_tracked{0};
  std::uint64_t leaks_reported = 0, bits_harvested = 0, moves = 0, frees = 0, free_ranges = 0, root_marks = 0;
  std::uint64_t reused_starts = 0, tracker_indexed_gcs = 0, tracker_run_gcs = 0, survivor_gcs = 0;  // ProfilerStats
  std::vector<StaleObject> stale;  // scratch of the stale check
  std::unordered_map<std::uint64_t, Detection> detections;  // per (site, type) group
  std::uint64_t bytes_at_gc = 0;
  bool finished = false;
};

}  // namespace internal

using internal::ProfilerState;

namespace {

std::uint32_t intern(ProfilerState& st, const internal::PairKey& key) {
  using Index = decltype(st.pair_index);
  Index::const_accessor found;
  if (st.pair_index.find(found, key)) return found->second;
  found.release();
  Index::accessor slot;
  if (st.pair_index.insert(slot, key))
    slot->second = static_cast<std::uint32_t>(st.pairs.push_back(key) - st.pairs.begin());
  return slot->second;
}

}  // namespace

namespace {

LeakReport make_report(const ProfilerState& st, const internal::StaleObject& o, std::uint64_t epoch) {
  LeakReport rep;
  rep.addr = o.addr;
  rep.size = o.size;
  rep.site_id = o.site;
  rep.type_id = o.type;
  if (auto it = st.types.find(o.type); it != st.types.end()) rep.type_name = it->second.name;
  if (auto it = st.sites.find(o.site); it != st.sites.end()) {
    rep.method = it->second.method;
    rep.bytecode_offset = it->second.bytecode_offset;
  }
  rep.last_access_epoch = epoch - o.idle_epochs;
  rep.epoch = epoch;
  rep.idle_bytes = o.idle_bytes;
  rep.path = st.paths.path(o.site, o.type);
  return rep;
}

void name_group(const ProfilerState& st, LeakGroup& g) {
  g.path = st.paths.path(g.site_id, g.type_id);
  if (auto it = st.types.find(g.type_id); it != st.types.end()) g.type_name = it->second.name;
  if (auto it = st.sites.find(g.site_id); it != st.sites.end()) {
    g.method = it->second.method;
    g.bytecode_offset = it->second.bytecode_offset;
  }
}

// Each held snapshot goes back to its bitmap clean, at the cost of its marked words: those the
// trace's dump found as runs, or (no trace) found, counted and zeroed in one pass now.
void release_held_bits(ProfilerState& st) {
  for (std::size_t s = 0; s < st.held_bits.size(); ++s) {
    if (!st.held_bits[s]) continue;
    if (st.control) st.held_bits[s]->clear_runs(st.held_runs[s]);
    else st.bits_harvested += st.held_bits[s]->count_and_clear();
    st.held_bits[s].reset();
  }
}

// The stale check's second condition: how many bytes a record's owner allocated since the
// record's last access, against the owner's threshold. The candidates' owner is usually the
// same from one record to the next (one mutator, or the program's clock): its clock is read
// once per run of records of one owner, not per record.
class IdleBytes {
 public:
  IdleBytes(ProfilerState& st, const ProfilerOptions& o, std::uint32_t epoch)
      : st_(st), clocks_(st.clocks.view()), automatic_(o.stale_after_bytes == ProfilerOptions::kAutoStaleBytes),
        fixed_(o.stale_after_bytes), epoch_(epoch) {}
  // Looks the record's pair up (key()) and its idle bytes (idle()); true if they reach the
  // threshold.
  bool progressed(const internal::TrackedRecord& r) {
    key_ = &st_.pairs[r.site_type];
    if (key_->owner != owner_) {
      owner_ = key_->owner;
      clock_ = clocks_.read(owner_, epoch_);
      threshold_ = automatic_ ? clock_.busiest_epoch() : fixed_;
    }
    idle_ = clock_.since(r.last_access);
    return idle_ >= threshold_;
  }
  const internal::PairKey& key() const { return *key_; }
  std::uint64_t idle() const { return idle_; }
  // The program clock's threshold (the stats' stale_bytes_threshold).
  std::uint64_t program_threshold() const {
    return automatic_ ? clocks_.busiest_epoch(internal::ProgressClocks::kProgram) : fixed_;
  }

 private:
  ProfilerState& st_;
  internal::ProgressClocks::View clocks_;
  bool automatic_;
  std::uint64_t fixed_;
  std::uint32_t epoch_;
  std::uint32_t owner_ = ~std::uint32_t{0};
  internal::ProgressClocks::View::Reading clock_;
  std::uint64_t threshold_ = 0;
  const internal::PairKey* key_ = nullptr;
  std::uint64_t idle_ = 0;
};

// The stale check at the end of `epoch`: every stale object, into `out`; with `mark` (gc_end
// only: it writes the records' reported flags), those not reported before are flagged new and
// marked reported. Without it nothing shared is written, so possible_leaks() may run it.
// Returns the program clock's progress threshold.
std::uint64_t collect_stale(ProfilerState& st, const ProfilerOptions& o, std::uint32_t epoch, bool mark,
                            std::vector<internal::StaleObject>& out) {
  out.clear();
  IdleBytes idle(st, o, epoch);
  const std::uint32_t log2k = st.tracker.log2_granule(0);
  st.tracker.for_each_stale(epoch, o.stale_after_epochs, st.full_gc_after,
                            [&](const internal::TrackedRecord& r) { return idle.progressed(r); },
                            [&](Address a, internal::TrackedRecord& r) {
                              const internal::PairKey& k = idle.key();
                              internal::StaleObject so;
                              so.addr = a;
                              so.size = std::uint64_t{r.size_flags & internal::StaleTracker::kSizeMask} << log2k;
                              so.site = k.site;
                              so.type = k.type;
                              so.idle_epochs = epoch - r.last_access;
                              so.idle_bytes = idle.idle();
                              if (mark && !(r.size_flags & internal::StaleTracker::kReported)) {
                                r.size_flags |= internal::StaleTracker::kReported;
                                so.is_new = true;
                              }
                              out.push_back(so);
                            });
  return idle.program_threshold();
}

// gc_end's stale check: the whole list (collect_stale) only when an object becomes stale in
// this epoch, since gc_end uses the list only to group the newly stale with the rest. Usually
// none does, and the records already reported are passed over with the epoch tests alone (a
// program whose few tracked objects stay stale for hundreds of GCs re-listed them every GC).
std::uint64_t check_stale_at_gc_end(ProfilerState& st, const ProfilerOptions& o, std::uint32_t epoch,
                                    std::vector<internal::StaleObject>& out) {
  {
    IdleBytes idle(st, o, epoch);
    if (!st.tracker.any_unreported_stale(epoch, o.stale_after_epochs, st.full_gc_after,
                                         [&](const internal::TrackedRecord& r) { return idle.progressed(r); })) {
      out.clear();
      return idle.program_threshold();
    }
  }  // collect_stale takes the clocks' lock again
  return collect_stale(st, o, epoch, true, out);
}

// A detached thread's objects move to the program's clock, and its slot is freed for reuse
// (gc_begin, mutators stopped: no thread interns a pair of the slot meanwhile).
void rebind_detached_owners(ProfilerState& st) {
  if (!st.clocks.any_closed()) return;
  std::unordered_map<std::uint32_t, std::uint32_t> moved;
  st.tracker.rebind([&](std::uint32_t pair) {
    const internal::PairKey k = st.pairs[pair];
    if (k.owner == internal::ProgressClocks::kProgram || !st.clocks.is_closed(k.owner)) return pair;
    auto [it, fresh] = moved.try_emplace(pair, 0);
    if (fresh) it->second = intern(st, internal::PairKey{k.site, k.type, internal::ProgressClocks::kProgram});
    return it->second;
  });
  st.clocks.release_closed();
}

// Paths from roots, inside gc_end after the stale check: each group with newly stale objects
// asks for a path to its most stale object (groups with a path or out of attempts ask for
// nothing), then one walk of the runtime's heap answers them all, before the records are
// written and the callbacks run. No request, no walk.
void search_leak_paths(ProfilerState& st, const ProfilerOptions& o, const std::vector<LeakGroup>& groups) {
  for (const LeakGroup& g : groups) st.paths.request(g.sample, g.site_id, g.type_id, o.path_attempts);
  st.paths.search(*o.heap_walker, o.path_search, [&](std::uint32_t type) -> std::string_view {
    const auto it = st.types.find(type);
    return it == st.types.end() ? std::string_view() : std::string_view(it->second.name);
  });
}

// FateReports::kCheaper's choice at gc_begin, from what the profiler knows then: the tracked
// objects the survivors' answers would cost (~30 instructions each: the collector's loop, the
// card or log, the tracker's pass) against the objects allocated since the last GC, about as
// many as a steady-state collection moves or frees, each hook call costing the collector ~5-25
// instructions (bench_sim_gc's collections, docs/results.md).
bool survivors_cheaper(std::uint64_t tracked, std::uint64_t allocated) {
  constexpr std::uint64_t kSurvivorsPerAllocation = 4;
  return tracked * kSurvivorsPerAllocation <= allocated;
}

}  // namespace

std::string format_site(std::string_view method, std::uint32_t bytecode_offset) {
  if (method.empty()) return "<unknown method>";
  // A source-location site ("leak.lua:12") has no bytecode offset to print.
  return bytecode_offset == SiteInfo::kNoOffset ? std::string(method) : fmt::format("{} bci {}", method, bytecode_offset);
}

std::string format_leak(const LeakReport& r) {
  const std::string where = format_site(r.method, r.bytecode_offset);
  return fmt::format(
      "objprof: possible leak: {:#x} {} ({} bytes) allocated at {} (site {}), last accessed in epoch {}, not since ({} GCs)",
      r.addr, format_type(r.type_name), r.size, where, r.site_id,
      r.last_access_epoch, r.epoch - r.last_access_epoch);
}

bool check_hooks_from_environment() noexcept {
  const char* v = std::getenv("OBJPROF_CHECK_HOOKS");
  return v != nullptr && *v != '\0' && std::string_view(v) != "0";
}

Profiler::Profiler(ProfilerOptions options)
    : options_(std::move(options)),
      min_tracked_size_(options_.min_tracked_size),
      check_hooks_(options_.check_hooks),
      mark_on_alloc_(options_.mark_on_alloc),
      mark_on_alloc_mode_(options_.mark_on_alloc_mode),
      state_(std::make_unique<ProfilerState>()) {
  instance_ = state_->instance;
  // Room for a small heap's GC logs from the start (the first collector thread's and gc_end's
  // merged ones, which trade places from GC to GC): a new profiler's first collections would
  // otherwise grow each of them, an allocation and a copy per doubling inside the pause (~300
  // instructions of scimark's ~9 K per GC). They keep whatever capacity a GC gives them later.
  constexpr std::size_t kInitialLog = 256;
  internal::CollectorLocal& first = state_->first_collector;
  first.moves.reserve(kInitialLog);
  first.ranges.reserve(kInitialLog);
  first.frees.reserve(kInitialLog);
  first.free_ranges.reserve(kInitialLog);
  state_->gc_moves.reserve(kInitialLog);
  state_->gc_ranges.reserve(kInitialLog);
  state_->gc_frees.reserve(kInitialLog);
  state_->gc_free_ranges.reserve(kInitialLog);
  state_->gc_clock_values.reserve(16);
  if (check_hooks_)
    state_->checker = std::make_unique<internal::HookChecker>(
        [this](std::string_view hook, Address addr, std::string what) { protocol_error(hook, addr, std::move(what)); });
}

void Profiler::protocol_error(std::string_view hook, Address addr, std::string what) {
  ProtocolError err;
  err.hook = hook;
  err.addr = addr;
  err.epoch = epoch();
  err.message = addr != 0 ? fmt::format("objprof: protocol error in {}({:#x}) in epoch {}: {}", hook, addr, err.epoch, what)
                          : fmt::format("objprof: protocol error in {} in epoch {}: {}", hook, err.epoch, what);
  std::uint64_t n;  // this error's number, from 1
  {
    std::lock_guard<std::mutex> lock(state_->protocol_mutex);
    n = ++state_->protocol_errors;
    if (!state_->first_protocol_error) state_->first_protocol_error = make_error(ErrorCode::kProtocol, err.message);
  }
  if (options_.on_protocol_error) {
    options_.on_protocol_error(err);
    return;
  }
  if (check_hooks_) {
    std::fprintf(stderr, "%s\n", err.message.c_str());
    std::abort();
  }
  // A runtime that gets one hook wrong usually gets it wrong at every call: print a few.
  constexpr std::uint64_t kPrinted = 10;
  if (n <= kPrinted) std::fprintf(stderr, "%s\n", err.message.c_str());
  if (n == kPrinted)
    std::fprintf(stderr, "objprof: further protocol errors are counted (ProfilerStats::protocol_errors), not printed\n");
}

Status Profiler::protocol_status() const {
  std::lock_guard<std::mutex> lock(state_->protocol_mutex);
  if (state_->first_protocol_error) return *state_->first_protocol_error;
  return {};
}

bool Profiler::in_other_spaces(Address addr, std::uint64_t bytes) const noexcept {
  const auto& spaces = state_->spaces;
  return std::any_of(spaces.begin(), spaces.end(), [&](const HeapSpace& s) { return s.contains(addr, bytes); });
}

namespace {

// The bitmap of the space that holds addr, or null (the several-spaces paths).
AccessBitmap* bitmap_holding(internal::ProfilerState& st, Address addr) noexcept {
  for (const auto& bitmap : st.bitmaps)
    if (bitmap->space().contains(addr)) return bitmap.get();
  return nullptr;
}

}  // namespace

// A root's mark (on_root): several collector threads may mark roots in one byte at once, so the
// bit is set with a test-first fetch-or and none is lost. False: in no space.
bool Profiler::mark_object(Address addr) noexcept {
  AccessBitmap* bitmap = bitmap_holding(*state_, addr);
  if (bitmap == nullptr) return false;
  bitmap->mark<MarkMode::kAtomicTestFirst>(addr);
  return true;
}

void Profiler::mark_allocated_in_spaces(ThreadState& thread, Address addr) noexcept {
  if (AccessBitmap* bitmap = bitmap_holding(*state_, addr)) {
    const BarrierDescriptor& d = bitmap->descriptor();
    mark_allocated(thread, d.bitmap.load(std::memory_order_relaxed), (addr - d.begin) >> d.log2_granule);
  }
}

bool Profiler::check_alloc(ThreadState& thread, Address addr, std::uint64_t size) {
  if (!in_spaces(addr, size)) {
    protocol_error("on_alloc", addr,
                   fmt::format("object [{:#x}, +{}) does not lie inside one registered space (add_space); the "
                               "allocation is dropped",
                               addr, size));
    return false;
  }
  return !state_->checker || state_->checker->alloc(thread, addr, size);
}

Result<std::unique_ptr<Profiler>> Profiler::create(ProfilerOptions options) {
  if (options.stale_after_epochs == 0)
    return make_error(ErrorCode::kInvalidArgument, "stale_after_epochs (GC_K) must be at least 1");
  // mark_mode_name's switch names every MarkMode (the compiler checks that it covers them), so
  // a new mode is accepted here with no second list to update.
  if (std::string_view(mark_mode_name(options.mark_on_alloc_mode)) == "?")
    return make_error(ErrorCode::kInvalidArgument,
                      fmt::format("mark_on_alloc_mode {} is not a MarkMode",
                                  static_cast<unsigned>(options.mark_on_alloc_mode)));
  if (options.trace_sink && !options.trace_path.empty())
    return make_error(ErrorCode::kInvalidArgument, "give either a trace sink or a trace path, not both");
  std::unique_ptr<ChunkSink> sink = std::move(options.trace_sink);
  if (!options.trace_path.empty()) {
    auto file = FileSink::create(options.trace_path);
    if (!file.ok()) return file.error();
    sink = std::move(*file);
  }
  if (!options.on_leak && !options.on_leak_group && options.default_leak_printer)
    options.on_leak_group = [](const LeakGroup& g) {
      std::fprintf(stderr, "%s\n", format_leak_group(g).c_str());
      if (g.path) std::fprintf(stderr, "objprof:   path from a root: %s\n", format_path(*g.path).c_str());
    };
  std::unique_ptr<Profiler> p(new Profiler(std::move(options)));
  if (sink) {
    auto writer = TraceWriter::create(std::move(sink), p->options_.chunk_payload);
    if (!writer.ok()) return writer.error();
    p->state_->writer = std::move(*writer);
    p->state_->control = p->state_->writer->make_buffer(trace::kControlStream);
  }
  p->always_object_events_ =
      p->options_.fate_reports == FateReports::kHooks || p->check_hooks_ || p->state_->writer != nullptr;
  return p;
}

Profiler::~Profiler() { (void)finish(); }

namespace {

Status check_space(const std::vector<HeapSpace>& spaces, const HeapSpace& space) {
  if (space.granule_count() > internal::StaleTracker::kMaxGranules)
    return make_error(ErrorCode::kInvalidArgument,
                      fmt::format("space of {} bytes has more than 2^32 granules of {} bytes", space.size(), space.alignment()));
  for (const HeapSpace& s : spaces) {
    if (space.begin() < s.end() && s.begin() < space.end())
      return make_error(ErrorCode::kInvalidArgument, fmt::format("space [{:#x}, {:#x}) overlaps space [{:#x}, {:#x})",
                                                                 space.begin(), space.end(), s.begin(), s.end()));
    if (s.alignment() != space.alignment())
      return make_error(ErrorCode::kInvalidArgument, "all spaces of one profiler must share one alignment K");
  }
  return {};
}

}  // namespace

Result<SpaceId> Profiler::add_space(const HeapSpace& space) { return add_space_impl(space, nullptr); }

Result<SpaceId> Profiler::add_space(const HeapSpace& space, AccessBitmap::ExternalBuffers buffers) {
  return add_space_impl(space, &buffers);
}

Result<SpaceId> Profiler::add_space_impl(const HeapSpace& space, const AccessBitmap::ExternalBuffers* buffers) {
  if (state_->frozen.load())
    return make_error(ErrorCode::kProtocol,
                      fmt::format("add_space([{:#x}, {:#x}) '{}') after the profiler started (a thread, type, site, "
                                  "allocation or GC exists): spaces must all be added first, the trace header lists them",
                                  space.begin(), space.end(), space.name()));
  OBJPROF_RETURN_IF_ERROR(check_space(state_->spaces, space));
  auto bm = buffers ? AccessBitmap::create(space, *buffers) : AccessBitmap::create(space);
  if (!bm.ok()) return bm.error();
  state_->spaces.push_back(space);
  state_->bitmaps.push_back(std::move(*bm));
  // gc_begin's per-space slots exist from here: the first GC's pause allocates none of them.
  state_->held_bits.resize(state_->bitmaps.size());
  state_->held_runs.resize(state_->bitmaps.size());
  state_->held_bit_ptrs.reserve(state_->bitmaps.size());
  return static_cast<SpaceId>(state_->spaces.size() - 1);
}

std::size_t Profiler::space_count() const noexcept { return state_->spaces.size(); }

AccessBitmap& Profiler::bitmap(SpaceId id) { return *state_->bitmaps.at(id); }

Status Profiler::set_space_window(SpaceId id, std::uint64_t from, std::uint64_t end) {
  if (id >= state_->bitmaps.size())
    return make_error(ErrorCode::kInvalidArgument,
                      fmt::format("set_space_window: no space {} ({} registered)", id, state_->bitmaps.size()));
  const std::uint64_t size = state_->bitmaps[id]->space().size();
  if (from > end || end > size)
    return make_error(ErrorCode::kInvalidArgument,
                      fmt::format("set_space_window: [{:#x}, {:#x}) is not a window of space {} ({:#x} bytes)", from, end,
                                  id, size));
  // Inside the bracket the epoch's bits were harvested and mutators wait: nothing is marked
  // outside the new window yet.
  if (!in_gc_.load(std::memory_order_acquire))
    return make_error(ErrorCode::kProtocol,
                      fmt::format("set_space_window outside gc_begin/gc_end (epoch {}): the window moves only while "
                                  "mutators are stopped after a harvest",
                                  epoch()));
  state_->bitmaps[id]->set_window(from, end);
  return {};
}

void Profiler::write_header_once() {
  std::call_once(state_->header_once, [this] {
    state_->frozen.store(true);
    state_->tracker.set_spaces(state_->spaces);
    if (state_->checker) state_->checker->set_spaces(state_->spaces);
    if (state_->spaces.size() == 1) {
      space_begin_ = state_->spaces[0].begin();
      space_bytes_ = state_->spaces[0].size();
      space_log2_granule_ = state_->spaces[0].log2_alignment();
      space_desc_ = &state_->bitmaps[0]->descriptor();
    }
    slow_alloc_ = check_hooks_ || state_->spaces.size() != 1;
    inline_alloc_below_ = slow_alloc_ || mark_on_alloc_ || state_->writer ? 0 : min_tracked_size_;
    plain_collector_hooks_ = !state_->checker && !state_->writer;  // in_the_space says "one space"
    granule_mask_ = (std::uint64_t{1} << space_log2_granule_) - 1;
    if (plain_collector_hooks_ && state_->spaces.size() == 1) tracked_starts_ = state_->tracker.alloc_starts();
    if (!state_->checker && state_->writer && state_->spaces.size() == 1) traced_starts_ = state_->tracker.alloc_starts();
    // The short paths with and without a trace card tracked objects' moves alike.
    if (tracked_starts_ != nullptr || traced_starts_ != nullptr) tracked_cards_ = state_->tracker.hook_cards();
    if (!state_->control) return;
    std::size_t bytes = 1 + 4 + 2;
    for (const HeapSpace& s : state_->spaces) bytes += 4 + 8 + 8 + EventBuffer::string_bytes(s.name());
    std::lock_guard<std::mutex> lock(state_->control_mutex);
    std::uint8_t* p = state_->control->begin_record(bytes);
    p = EventBuffer::put_u8(p, static_cast<std::uint8_t>(trace::Tag::kHeader));
    p = EventBuffer::put_u32(p, state_->spaces.empty() ? HeapSpace::kDefaultAlignment : state_->spaces[0].alignment());
    p = EventBuffer::put_u16(p, static_cast<std::uint16_t>(state_->spaces.size()));
    for (std::size_t i = 0; i < state_->spaces.size(); ++i) {
      const HeapSpace& s = state_->spaces[i];
      p = EventBuffer::put_u32(p, static_cast<std::uint32_t>(i));
      p = EventBuffer::put_u64(p, s.begin());
      p = EventBuffer::put_u64(p, s.end());
      p = EventBuffer::put_string(p, s.name());
    }
    state_->control->flush();
  });
}

Status Profiler::define_type(const TypeInfo& type) {
  write_header_once();
  if (!state_->types.emplace(type.id, type).second)
    return make_error(ErrorCode::kInvalidArgument, fmt::format("type id {} is already defined", type.id));
  if (state_->control) {
    std::lock_guard<std::mutex> lock(state_->control_mutex);
    std::uint8_t* p = state_->control->begin_record(1 + 4 + 8 + 1 + EventBuffer::string_bytes(type.name));
    p = EventBuffer::put_u8(p, static_cast<std::uint8_t>(trace::Tag::kTypeDef));
    p = EventBuffer::put_u32(p, type.id);
    p = EventBuffer::put_u64(p, type.instance_size);
    p = EventBuffer::put_u8(p, type.is_array ? 1 : 0);
    EventBuffer::put_string(p, type.name);
    // Flushed now so the definition precedes, in the file, any thread chunk that uses it.
    state_->control->flush();
  }
  return {};
}

Status Profiler::define_site(const SiteInfo& site) {
  write_header_once();
  if (!state_->sites.emplace(site.id, site).second)
    return make_error(ErrorCode::kInvalidArgument, fmt::format("site id {} is already defined", site.id));
  if (state_->control) {
    std::lock_guard<std::mutex> lock(state_->control_mutex);
    std::uint8_t* p = state_->control->begin_record(1 + 4 + 8 + 4 + EventBuffer::string_bytes(site.method));
    p = EventBuffer::put_u8(p, static_cast<std::uint8_t>(trace::Tag::kSiteDef));
    p = EventBuffer::put_u32(p, site.id);
    p = EventBuffer::put_u64(p, site.pc);
    p = EventBuffer::put_u32(p, site.bytecode_offset);
    EventBuffer::put_string(p, site.method);
    state_->control->flush();
  }
  return {};
}

Result<ThreadState*> Profiler::attach_thread(std::uint32_t id, std::string name) {
  write_header_once();
  auto t = std::make_unique<ThreadState>(id, std::move(name));
  t->set_clock_slot(state_->clocks.open(epoch()));
  if (state_->writer) t->set_buffer(state_->writer->make_buffer(trace::kThreadStreamBase + id));
  ThreadState* raw = t.get();
  {
    std::unique_lock<std::shared_mutex> lock(state_->threads_mutex);
    for (const auto& other : state_->threads)
      if (other->id() == id)
        return make_error(ErrorCode::kInvalidArgument, fmt::format("thread id {} is already attached", id));
    state_->threads.push_back(std::move(t));
  }
  if (state_->control) {
    std::lock_guard<std::mutex> lock(state_->control_mutex);
    std::uint8_t* p = state_->control->begin_record(1 + 4 + EventBuffer::string_bytes(raw->name()));
    p = EventBuffer::put_u8(p, static_cast<std::uint8_t>(trace::Tag::kThreadDef));
    p = EventBuffer::put_u32(p, id);
    EventBuffer::put_string(p, raw->name());
    state_->control->flush();
  }
  return raw;
}

void Profiler::detach_thread(ThreadState& thread) {
  ProfilerState& st = *state_;
  std::uint32_t id = 0;
  {
    // Under the lock no collector walks the threads, so none can read this one once it is gone.
    std::unique_lock<std::shared_mutex> lock(st.threads_mutex);
    auto it = std::find_if(st.threads.begin(), st.threads.end(), [&](const auto& t) { return t.get() == &thread; });
    if (it == st.threads.end()) {
      lock.unlock();
      // Not dereferenced: it may be a ThreadState this profiler already freed.
      protocol_error("detach_thread", 0, "not a ThreadState attached to this profiler (detached twice?)");
      return;
    }
    st.clocks.close(thread.clock_slot());
    if (st.checker) st.checker->detach(thread);
    id = thread.id();
    thread.pending_marks.merge();
    if (EventBuffer* b = thread.buffer()) b->flush();
    st.retired.add(thread);
    ++st.retired_threads;
    auto& pending = thread.pending_tracked();
    st.orphaned_tracked.insert(st.orphaned_tracked.end(), pending.begin(), pending.end());
    // The records whose starts the thread claimed itself, and the others (claimed at gc_begin).
    auto& records = thread.pending_records();
    const auto unclaimed = static_cast<std::ptrdiff_t>(std::min(thread.unclaimed_records(), records.size()));
    st.orphaned_records.insert(st.orphaned_records.end(), records.begin(), records.begin() + unclaimed);
    st.orphaned_claimed.insert(st.orphaned_claimed.end(), records.begin() + unclaimed, records.end());
    auto& resizes = thread.pending_resizes();
    st.orphaned_resizes.insert(st.orphaned_resizes.end(), resizes.begin(), resizes.end());
    // Last in the vector, so the order of the others does not matter to anyone.
    std::swap(*it, st.threads.back());
    st.threads.pop_back();  // frees the ThreadState and its trace buffer
  }
  std::lock_guard<std::mutex> lock(st.control_mutex);
  // Inside a bracket the thread's last chunk is held until gc_end; its end record follows it.
  if (st.in_bracket) st.deferred_thread_ends.push_back(id);
  else write_thread_end(id);
}

void Profiler::write_thread_end(std::uint32_t id) {
  ProfilerState& st = *state_;
  if (!st.control) return;
  std::uint8_t* p = st.control->begin_record(1 + 4);
  p = EventBuffer::put_u8(p, static_cast<std::uint8_t>(trace::Tag::kThreadEnd));
  EventBuffer::put_u32(p, id);
  st.control->flush();
}


std::uint32_t Profiler::intern_pair(ThreadState& thread, std::uint32_t site, std::uint32_t type) {
  // The cache is the thread's own, so its key need not name the thread's clock.
  const std::uint64_t key = (std::uint64_t{site} << 32) | type;
  internal::PairCache& cache = thread.pair_cache();
  const std::size_t cache_slot = internal::PairCache::slot(key);
  if (cache.keys[cache_slot] == key && key != internal::PairCache::kEmpty) return cache.pairs[cache_slot];
  const std::uint32_t pair = intern(*state_, internal::PairKey{site, type, thread.clock_slot()});
  cache.keys[cache_slot] = key;
  cache.pairs[cache_slot] = pair;
  return pair;
}

std::uint32_t Profiler::size_granules(std::uint64_t size) const noexcept {
  const std::uint32_t log2k = state_->spaces.empty() ? 3 : state_->spaces[0].log2_alignment();
  return static_cast<std::uint32_t>(
      std::min<std::uint64_t>((size + (std::uint64_t{1} << log2k) - 1) >> log2k, internal::StaleTracker::kSizeMask));
}

std::uint32_t Profiler::birth_epoch() const noexcept {
  // Inside a GC bracket (a sweep running between mutator steps) a new object counts in the
  // next epoch, as the trace does: its records are written after the bracket's gc-end.
  return static_cast<std::uint32_t>(epoch() + (in_gc() ? 1 : 0));
}

void Profiler::track_alloc(ThreadState& thread, std::uint32_t site, std::uint32_t type, Address addr, std::uint64_t size) {
  // One space (the object is in it: on_alloc checked): the tracker's own record, so gc_begin
  // only copies it. Several: the address, for the tracker to place.
  if (space_desc_) {
    const auto g = static_cast<std::uint32_t>((addr - space_begin_) >> space_log2_granule_);
    std::vector<internal::TrackedRecord>& records = thread.pending_records();
    // Whether the records rise (a copying GC's runs then find the young by binary search): one
    // compare with the granule after the last; once one falls, no granule reaches kRecordsFell.
    std::uint64_t& next = thread.next_rising_granule();
    next = g < next ? ThreadState::kRecordsFell : std::uint64_t{g} + 1;
    records.push_back(internal::TrackedRecord{g, intern_pair(thread, site, type), size_granules(size), birth_epoch()});
    // Outside a bracket the thread claims the new start itself, so gc_begin does not visit the
    // young records once more before the pass that drops most of them. Inside one (a sweep
    // running between mutator steps) the collector still uses the bits; the record is claimed
    // at the next gc_begin (it joins the prefix of unclaimed records: those of this bracket).
    internal::StaleTracker& tracker = state_->tracker;
    if (std::uint64_t* starts = tracker.alloc_starts(); starts != nullptr && !in_gc_.load(std::memory_order_acquire))
        [[likely]] {
      internal::StaleTracker::claim_at_alloc(starts, g, tracker.alloc_conflict());
    } else {
      // Claimed records never come before unclaimed ones (gc_begin takes every thread's
      // records); if they did, claiming them twice would only cost a conflict the index
      // resolves.
      thread.unclaimed_records() = records.size();
    }
    return;
  }
  thread.pending_tracked().push_back(
      internal::PendingTracked{addr, intern_pair(thread, site, type), size_granules(size), birth_epoch()});
}

bool Profiler::check_resize(ThreadState& thread, Address addr) {
  if (!in_spaces(addr, 0)) {
    protocol_error("on_resize", addr, "an address outside every registered space; the event is dropped");
    return false;
  }
  return !state_->checker || state_->checker->resize(thread, addr);
}

void Profiler::track_resize(ThreadState& thread, Address addr, std::uint64_t bytes, std::uint32_t site, std::uint32_t type) {
  thread.pending_resizes().push_back(
      internal::PendingResize{addr, intern_pair(thread, site, type), size_granules(bytes), birth_epoch()});
}

namespace {

// Writes the marked words of one epoch as runs (trace_format.h, kBitmapRuns): each run's
// words copied as they are, behind its gap and length, in records that fit one chunk (a run
// longer than that goes on in the next record). A harvest's marks cluster: scimark's 186
// marked words are 6-7 runs, ~1.5 KB to copy where packed entries took ~1.9 KB written a
// word at a time.
// Out of line: inlined into gc_begin (its one caller) it cost gc_begin's untraced path ~33
// instructions a GC in registers spilled around it.
[[gnu::noinline]] void write_bitmap(EventBuffer& out, std::uint32_t space, const std::uint8_t* bits,
                                   const std::vector<BitmapSnapshot::MarkedRun>& runs) {
  constexpr std::size_t kHead = 1 + 5 + trace::kMaxUvarBytes, kRunHead = 2 * trace::kMaxUvarBytes;
  const std::size_t room = out.capacity() - kHead;  // >= 256 - 21: a run head and a word fit
  std::size_t r = 0;
  std::uint64_t done = 0;  // words of runs[r] in earlier records
  while (r < runs.size()) {
    // The pieces this record takes: whole runs while they fit, then as much of the next as fits.
    std::size_t left = room, pieces = 0, last = r;
    std::uint64_t last_words = 0;  // how many words of runs[last] this record takes
    for (std::size_t i = r; i < runs.size() && left >= kRunHead + 8; ++i) {
      const std::uint64_t avail = runs[i].words - (i == r ? done : 0);
      const std::uint64_t fit = std::min<std::uint64_t>(avail, (left - kRunHead) / 8);
      left -= kRunHead + fit * 8;
      ++pieces;
      last = i;
      last_words = fit;
      if (fit < avail) break;
    }
    std::uint8_t* p = out.begin_record_at_most(kHead + (room - left));
    p = EventBuffer::put_u8(p, static_cast<std::uint8_t>(trace::Tag::kBitmapRuns));
    p = EventBuffer::put_uvar(p, space);
    p = EventBuffer::put_uvar(p, pieces);
    std::uint64_t at = 0;  // the end of the piece before: the first gap is the first word's index
    for (std::size_t i = r; i <= last; ++i) {
      const std::uint64_t from = runs[i].first + (i == r ? done : 0);
      const std::uint64_t n = i == last ? last_words : runs[i].words - (i == r ? done : 0);
      p = EventBuffer::put_uvar(p, from - at);
      p = EventBuffer::put_uvar(p, n);
      std::memcpy(p, bits + from * 8, n * 8);
      p += n * 8;
      at = from + n;
    }
    out.end_record(p);
    // Where the next record starts: after the last piece, in its run or at the next run.
    const std::uint64_t taken = (last == r ? done : 0) + last_words;
    if (taken == runs[last].words) {
      r = last + 1;
      done = 0;
    } else {
      r = last;
      done = taken;
    }
  }
}

}  // namespace

Status Profiler::gc_begin(GcKind kind) {
  write_header_once();
  bool expected = false;
  if (!in_gc_.compare_exchange_strong(expected, true))
    return make_error(ErrorCode::kProtocol, fmt::format("gc_begin in epoch {} while a GC is already running", epoch()));
  ProfilerState& st = *state_;
  // Everything gc_begin writes (the mutators' buffers, gc-begin, the bitmap dump) goes to a
  // file in one write(2) when it returns.
  TraceWriter::Gather gather(st.writer.get());
  const auto e = epoch();
  if (st.checker) st.checker->gc_begin();
  std::uint64_t bytes = 0, objects = 0;
  {
    std::shared_lock<std::shared_mutex> lock(st.threads_mutex);
    bytes = st.retired.bytes;
    objects = st.retired.objects;
    st.objects_tracked.fetch_add(st.tracker.add(st.orphaned_tracked), std::memory_order_relaxed);
    st.orphaned_tracked.clear();
    st.objects_tracked.fetch_add(st.tracker.add_records(st.orphaned_records), std::memory_order_relaxed);
    st.orphaned_records.clear();
    st.objects_tracked.fetch_add(st.tracker.add_claimed_records(st.orphaned_claimed), std::memory_order_relaxed);
    st.orphaned_claimed.clear();
    std::vector<internal::PendingResize>& resizes = st.gc_resizes;
    resizes.swap(st.orphaned_resizes);
    st.orphaned_resizes.clear();
    std::vector<std::pair<std::uint32_t, std::uint64_t>>& clock_values = st.gc_clock_values;
    clock_values.clear();
    for (const auto& t : st.threads) {
      // Mutators are stopped: their buffers go out now, so every alloc of this epoch precedes
      // the gc-begin record in the file.
      if (EventBuffer* b = t->buffer()) b->flush();
      st.objects_tracked.fetch_add(st.tracker.add(t->pending_tracked()), std::memory_order_relaxed);
      t->pending_tracked().clear();
      // The thread's records change hands (no copy): most die in this GC and never reach the table.
      st.objects_tracked.fetch_add(
          st.tracker.adopt_young(t->pending_records(), t->unclaimed_records(),
                                 t->next_rising_granule() != ThreadState::kRecordsFell),
          std::memory_order_relaxed);
      t->unclaimed_records() = 0;
      t->next_rising_granule() = 0;
      resizes.insert(resizes.end(), t->pending_resizes().begin(), t->pending_resizes().end());
      t->pending_resizes().clear();
      const std::uint64_t own = t->allocated_bytes.load(std::memory_order_relaxed);
      objects += t->allocated_objects.load(std::memory_order_relaxed);
      bytes += own;
      clock_values.emplace_back(t->clock_slot(), own);
      t->reset_cache();
      t->pending_marks.merge();  // before the harvest below: the marks belong to this epoch
    }
    st.objects_tracked.fetch_add(st.tracker.resize(resizes), std::memory_order_relaxed);
    resizes.clear();
    {
      // Every thread's clock and the program's under one lock, taken after the threads'
      // buffers flushed: the clocks' lock is a leaf, held around nothing else.
      internal::ProgressClocks::Recorder clocks = st.clocks.recorder();
      for (const auto& [slot, own] : clock_values) clocks.record(slot, e, own);
      clocks.record_program(e, bytes);
    }
    rebind_detached_owners(st);
  }
  st.bytes_at_gc = bytes;
  std::lock_guard<std::mutex> lock(st.control_mutex);
  // From here to gc_end, what mutators write (a sweep that runs between their steps) belongs
  // after the bracket: the writer holds it (TraceWriter::hold_mutator_chunks).
  st.in_bracket = true;
  st.gc_kind = kind;
  if (st.writer) st.writer->hold_mutator_chunks(e + 1);
  if (st.control) {
    std::uint8_t* p = st.control->begin_record(1 + 8 + 1 + 8);
    p = EventBuffer::put_u8(p, static_cast<std::uint8_t>(trace::Tag::kGcBegin));
    p = EventBuffer::put_u64(p, e);
    p = EventBuffer::put_u8(p, static_cast<std::uint8_t>(kind));
    EventBuffer::put_u64(p, bytes);
  }
  // Harvest the epoch's bits: swap each bitmap (the mutator-visible part is one pointer
  // exchange) and dump them; gc_end applies them to the tracked objects at their pre-GC
  // addresses, in the tracker's one pass over its records.
  // held_bits and held_runs have a slot per space from add_space (no space is added later).
  for (std::size_t s = 0; s < st.bitmaps.size(); ++s) {
    auto snap = st.bitmaps[s]->snapshot_and_clear();
    if (!snap.ok()) {
      release_held_bits(st);
      st.in_bracket = false;
      if (st.writer) st.writer->release_held();
      in_gc_.store(false);
      return snap.error();
    }
    if (check_hooks_) {
      const std::size_t from = snap->first_byte(), to = snap->bytes().size();
      if (const std::uint64_t stray = snap->clear_outside_window(); stray > 0) [[unlikely]] {
        const HeapSpace& sp = st.bitmaps[s]->space();
        const std::uint64_t per_byte = std::uint64_t{8} << sp.log2_alignment();
        protocol_error("gc_begin", 0,
                       fmt::format("{} marked granules of space {} lie outside the window [{:#x}, {:#x}) that "
                                   "set_space_used_from / set_space_used declare; the marks are dropped",
                                   stray, s, sp.begin() + from * per_byte, sp.begin() + to * per_byte));
      }
    }
    if (st.control) {  // the dump needs the marked words now: one pass counts them and finds their runs
      st.bits_harvested += snap->marked_runs(st.held_runs[s]);
      write_bitmap(*st.control, static_cast<std::uint32_t>(s), snap->bytes().data(), st.held_runs[s]);
    }
    st.held_bits[s].emplace(std::move(*snap));
  }
  if (st.control) st.control->flush();
  // The collector hooks' short paths, until gc_end.
  short_hook_starts_.store(tracked_starts_, std::memory_order_relaxed);
  // The way this GC's fates reach the tracker. With the survivors the hooks' reports do not reach
  // it, so they card nothing; report_survivors cards the moves it finds instead.
  st.survivors_this_gc = !always_object_events_ && (options_.fate_reports == FateReports::kSurvivors ||
                                                    survivors_cheaper(st.tracker.live(), objects - st.objects_at_gc));
  st.objects_at_gc = objects;
  st.survivors_reported = false;
  wants_object_events_.store(!st.survivors_this_gc, std::memory_order_relaxed);
  // A copying collector's runs go to the tracker as logs (StaleTracker::take_runs_this_gc).
  const bool may_card = st.tracker.hooks_may_card() && !st.survivors_this_gc;
  st.runs_logged = may_card && st.tracker.take_runs_this_gc();
  short_hook_cards_.store(may_card && !st.runs_logged ? tracked_cards_ : nullptr, std::memory_order_relaxed);
  traced_hook_starts_.store(traced_starts_, std::memory_order_relaxed);
  return {};
}

namespace {

// The calling collector thread's log. enumerable_thread_specific::local() is a hash lookup;
// on_move/on_free run once per object per GC, so each thread remembers its slot for the
// profiler instance it last served (internal::collector_cache: slots are stable until the
// profiler is destroyed, and a new profiler has a new instance number even at a reused
// address). Inlined into the collector hooks, the lookup out of line.
[[gnu::noinline]] internal::CollectorLocal& collector_local_slow(ProfilerState& st) {
  const std::thread::id me = std::this_thread::get_id();
  std::thread::id unowned{};
  const bool first = st.first_collector_owner.load(std::memory_order_relaxed) == me ||
                     st.first_collector_owner.compare_exchange_strong(unowned, me, std::memory_order_relaxed);
  internal::CollectorLocal& local = first ? st.first_collector : st.collectors.local();
  internal::collector_cache = {st.instance, &local};
  return local;
}

OBJPROF_ALWAYS_INLINE internal::CollectorLocal& collector_local(ProfilerState& st) {
  if (!internal::cache_holds(st.instance)) [[unlikely]] return collector_local_slow(st);
  return static_cast<internal::CollectorLocal&>(*internal::collector_cache.counts);
}

// Appends to a log whose growth is out of line, so the hooks' common path (room in the vector,
// kept from GC to GC) needs no frame.
template <class T>
[[gnu::noinline]] void append_grown(std::vector<T>& log, const T& item) {
  log.push_back(item);
}
template <class T>
OBJPROF_ALWAYS_INLINE void append(std::vector<T>& log, const T& item) {
  if (log.size() == log.capacity()) [[unlikely]] {
    append_grown(log, item);
    return;
  }
  log.push_back(item);
}

[[gnu::noinline]] void make_collector_buffer(ProfilerState& st, internal::CollectorLocal& local) {
  local.buffer = st.writer->make_buffer(trace::kCollectorStream);
}

// The calling collector thread's trace buffer, created on its first event; null without a trace.
// Inlined into every collector hook (on_move runs once per moved object): a call here cost a
// copying GC's hooks 6 M instructions in listleak-semispace once a fifth hook used it.
OBJPROF_ALWAYS_INLINE EventBuffer* collector_buffer(ProfilerState& st, internal::CollectorLocal& local) {
  if (!st.writer) return nullptr;
  if (!local.buffer) [[unlikely]] make_collector_buffer(st, local);
  return local.buffer.get();
}

}  // namespace

internal::CollectorCounts& Profiler::collector_counts_slow() { return collector_local_slow(*state_); }

// Out of line: move_tracked's carded path, the usual one, then needs no frame.
OBJPROF_NOINLINE void Profiler::log_move(internal::CollectorCounts& counts, Address from, Address to) {
  append(static_cast<internal::CollectorLocal&>(counts).moves, internal::MoveLog{from, to});
}

// A tracked object's move on the hooks' short paths (plain and traced): into the tracker's cards
// where it can (StaleTracker::card_move), else into the log. Inlined into both: a call from the
// traced path cost listleak-semispace's traced GCs 1 % more instructions.
OBJPROF_ALWAYS_INLINE void Profiler::card_or_log_move(internal::CollectorCounts& counts, const std::uint64_t* starts,
                                                      Address from, Address to) {
  if (std::uint32_t* cards = short_hook_cards();
      cards != nullptr && internal::StaleTracker::card_move(cards, starts, from - space_begin_, to - space_begin_)) {
    ++counts.moves_carded;
    return;
  }
  log_move(counts, from, to);
}

// The traced hooks' fast paths make no call but tail calls: the thread's log cached, its
// buffer made and with room, a tracked move carded (or logged by a tail call, log_move being
// out of line). A flush, a collector thread's first event, a log's growth: the *_slow paths.
// With calls on the fast path the compiler saved six registers around every move (~14
// instructions of ~75 per move in listleak-semispace's traced GCs).
void Profiler::move_traced(Address from, Address to) {
  const std::uint64_t* starts = traced_hook_starts_.load(std::memory_order_relaxed);
  const Address off = from - space_begin_;
  if (starts == nullptr || off >= space_bytes_ || to - space_begin_ >= space_bytes_ ||
      !internal::cache_holds(instance_)) [[unlikely]]
    return move_traced_slow(from, to);
  auto& local = static_cast<internal::CollectorLocal&>(*internal::collector_cache.counts);
  EventBuffer* b = local.buffer.get();
  if (b == nullptr || !b->fits(trace::kMaxMovePackedBytes)) [[unlikely]] return move_traced_slow(from, to);
  if (tracked_start(starts, off)) return move_traced_tracked(local, *b, starts, from, to);
  // Most moves are of untracked objects: their record and count need only the buffer, the
  // addresses and the thread's counts in registers (with the tracked object's carding inlined
  // here, this path saved three registers around the record's encoding, now two: ~3
  // instructions a move fewer).
  b->move_fitting(from, to);
  ++local.moves_seen;
}

void Profiler::move_traced_tracked(internal::CollectorCounts& counts, EventBuffer& b, const std::uint64_t* starts,
                                   Address from, Address to) {
  b.move_fitting(from, to);
  ++counts.moves_seen;
  card_or_log_move(counts, starts, from, to);  // its log_move is a tail call
}

void Profiler::move_traced_slow(Address from, Address to) {
  if (const std::uint64_t* starts = traced_hook_starts_.load(std::memory_order_relaxed)) [[likely]] {
    const Address off = from - space_begin_;
    if (off < space_bytes_ && to - space_begin_ < space_bytes_) [[likely]] {
      internal::CollectorLocal& local = collector_local(*state_);
      collector_buffer(*state_, local)->move(from, to);
      ++local.moves_seen;
      if (tracked_start(starts, off)) card_or_log_move(local, starts, from, to);
      return;
    }
  }
  move_in_full(from, to);
}

void Profiler::free_traced(Address addr) {
  const std::uint64_t* starts = traced_hook_starts_.load(std::memory_order_relaxed);
  const Address off = addr - space_begin_;
  if (starts == nullptr || off >= space_bytes_ || !internal::cache_holds(instance_)) [[unlikely]]
    return free_traced_slow(addr);
  auto& local = static_cast<internal::CollectorLocal&>(*internal::collector_cache.counts);
  EventBuffer* b = local.buffer.get();
  if (b == nullptr || !b->fits(trace::kMaxFreePackedBytes)) [[unlikely]] return free_traced_slow(addr);
  b->free_fitting(addr);
  ++local.frees_seen;
  if (tracked_start(starts, off)) return log_free(local, addr);
}

void Profiler::free_traced_slow(Address addr) {
  if (const std::uint64_t* starts = traced_hook_starts_.load(std::memory_order_relaxed)) [[likely]] {
    const Address off = addr - space_begin_;
    if (off < space_bytes_) [[likely]] {
      internal::CollectorLocal& local = collector_local(*state_);
      collector_buffer(*state_, local)->free(addr);
      ++local.frees_seen;
      if (tracked_start(starts, off)) append(local.frees, addr);
      return;
    }
  }
  free_in_full(addr);
}

void Profiler::move_in_full(Address from, Address to) {
  if (!in_gc_.load(std::memory_order_relaxed)) [[unlikely]] {
    protocol_error("on_move", from, fmt::format("moved to {:#x} outside gc_begin/gc_end; the event is dropped", to));
    return;
  }
  if (!in_spaces(from, 0) || !in_spaces(to, 0)) [[unlikely]] {
    protocol_error("on_move", from,
                   fmt::format("moved to {:#x}: an address outside every registered space; the event is dropped", to));
    return;
  }
  if (state_->checker) state_->checker->move(from, to);
  auto& local = collector_local(*state_);
  if (EventBuffer* b = collector_buffer(*state_, local)) b->move(from, to);
  ++local.moves_seen;
  if (state_->tracker.may_hold(from)) local.moves.push_back({from, to});
}

void Profiler::on_move_range(Address from, Address to, std::uint64_t bytes) {
  // The short paths (no hook checks, one space, inside the bracket; with or without a trace):
  // the trace record, the count, and the tracked objects of the range carded one by one where
  // the cards can take them, else the range logged. A copying collector that reports its runs
  // of adjacent survivors as ranges then keeps the tracker's one pass (a logged range takes
  // the index of the records) and pays nothing per untracked object.
  const std::uint64_t* starts = short_hook_starts();
  const bool traced = starts == nullptr;
  if (traced) starts = traced_hook_starts_.load(std::memory_order_relaxed);
  if (starts != nullptr && bytes != 0 && in_the_space(from, bytes) && in_the_space(to, bytes) &&
      ((from | to) & granule_mask_) == 0) [[likely]] {
    internal::CollectorLocal& local = collector_local(*state_);
    if (traced) collector_buffer(*state_, local)->move_range(from, to, bytes);
    ++local.moves_seen;
    const Address off = from - space_begin_;
    if (std::uint32_t* cards = short_hook_cards(); cards != nullptr) {
      // Cards every tracked object in the range (none: nothing to do), or -1: logged.
      if (const std::int64_t n = internal::StaleTracker::card_range(cards, starts, off, bytes, to - from); n >= 0) {
        local.moves_carded += static_cast<std::uint64_t>(n);
        return;
      }
    } else if (!internal::StaleTracker::any_bit_in(starts, off >> space_log2_granule_,
                                                   (off + bytes + granule_mask_) >> space_log2_granule_)) {
      return;  // no tracked object moves
    }
    local.ranges.push_back({from, to, bytes});
    return;
  }
  if (!in_gc_.load(std::memory_order_relaxed)) [[unlikely]] {
    protocol_error("on_move_range", from,
                   fmt::format("{} bytes moved to {:#x} outside gc_begin/gc_end; the event is dropped", bytes, to));
    return;
  }
  if (!in_spaces(from, bytes) || !in_spaces(to, bytes)) [[unlikely]] {
    protocol_error("on_move_range", from,
                   fmt::format("{} bytes moved to {:#x}: a range outside every registered space; the event is dropped",
                               bytes, to));
    return;
  }
  if (state_->checker) state_->checker->move_range(from, to, bytes);
  auto& local = collector_local(*state_);
  if (EventBuffer* b = collector_buffer(*state_, local)) b->move_range(from, to, bytes);
  ++local.moves_seen;
  local.ranges.push_back({from, to, bytes});  // few, and a range may cover many regions
}

void Profiler::move_tracked(internal::CollectorCounts& counts, const std::uint64_t* starts, Address from, Address to) {
  card_or_log_move(counts, starts, from, to);
}

OBJPROF_NOINLINE void Profiler::log_free(internal::CollectorCounts& counts, Address addr) {
  append(static_cast<internal::CollectorLocal&>(counts).frees, addr);
}

void Profiler::free_in_full(Address addr) {
  if (!in_gc_.load(std::memory_order_relaxed)) [[unlikely]] {
    protocol_error("on_free", addr, "called outside gc_begin/gc_end; the event is dropped");
    return;
  }
  if (!in_spaces(addr, 0)) [[unlikely]] {
    protocol_error("on_free", addr, "an address outside every registered space; the event is dropped");
    return;
  }
  if (state_->checker) state_->checker->free(addr);
  auto& local = collector_local(*state_);
  if (EventBuffer* b = collector_buffer(*state_, local)) b->free(addr);
  ++local.frees_seen;
  if (state_->tracker.may_hold(addr)) local.frees.push_back(addr);
}

void Profiler::on_free_batch(std::span<const Address> addrs) {
  if (addrs.empty()) return;
  if (!in_gc_.load(std::memory_order_relaxed)) [[unlikely]] {
    protocol_error("on_free_batch", addrs.front(),
                   fmt::format("{} frees outside gc_begin/gc_end; the events are dropped", addrs.size()));
    return;
  }
  ProfilerState& st = *state_;
  auto& local = collector_local(st);
  EventBuffer* b = collector_buffer(st, local);
  if (!st.checker) {
    // No shadow to update: if every address is in a space (the usual case), the records (with
    // a trace), the count and the tracker's filter are all there is, in one loop each.
    bool valid = true;
    for (Address addr : addrs) valid &= in_spaces(addr, 0);
    if (valid) {
      if (b)
        for (Address addr : addrs) b->free(addr);
      local.frees_seen += addrs.size();
      st.tracker.filter_starts(addrs, local.frees);
      return;
    }
  }
  for (Address addr : addrs) {
    if (!in_spaces(addr, 0)) [[unlikely]] {
      protocol_error("on_free_batch", addr, "an address outside every registered space; the event is dropped");
      continue;
    }
    if (st.checker) st.checker->free(addr);
    if (b) b->free(addr);
    ++local.frees_seen;
    if (st.tracker.may_hold(addr)) local.frees.push_back(addr);
  }
}

// on_free_range's short paths only (the only space, the range inside it, its start bits
// `starts`): the range's granule starts, whole words at a time, straight from the bits.
// A lazy sweep reports a range per step and more: the generic filter (may_hold_range, which
// looks for the space first) cost scimark's lazy sweep ~65 instructions a range more.
void Profiler::log_free_range(internal::CollectorCounts& counts, const std::uint64_t* starts, Address addr,
                              std::uint64_t bytes) {
  std::vector<internal::FreeRangeLog>& log = static_cast<internal::CollectorLocal&>(counts).free_ranges;
  // A lazy sweep reports its run of dead cells at the end of every step, and the next step's
  // first run starts where that one ended: a range that continues the thread's last logged
  // one extends it, so gc_end retires one range instead of one per step (listleak-lazysweep:
  // ~5,400 ranges of a 4 KiB step per run). The union frees exactly what the two ranges free.
  if (!log.empty() && log.back().from + log.back().bytes == addr) [[unlikely]] {
    log.back().bytes += bytes;
    return;
  }
  const Address off = addr - space_begin_;
  const std::uint64_t g0 = (off + granule_mask_) >> space_log2_granule_;  // the granules starting inside
  const std::uint64_t g1 = (off + bytes + granule_mask_) >> space_log2_granule_;
  if (g0 >= g1 || !internal::StaleTracker::any_bit_in(starts, g0, g1)) return;
  append(log, internal::FreeRangeLog{addr, bytes});
}

// A sweep's runs of dead cells with a trace, as free_traced for one free: a mark-sweep
// collector reports one per run (points-marksweep ~4 K a run), and through free_range_in_full
// each paid its frame, the thread's log found again and the buffer's checks (~18 instructions
// more a range).
void Profiler::free_range_traced(Address addr, std::uint64_t bytes) {
  const std::uint64_t* starts = traced_hook_starts_.load(std::memory_order_relaxed);
  const Address off = addr - space_begin_;  // before the record's byte stores, which may alias it
  if (starts == nullptr || !at_in_the_space(off, bytes) || bytes == 0 || !internal::cache_holds(instance_)) [[unlikely]]
    return free_range_in_full(addr, bytes);
  auto& local = static_cast<internal::CollectorLocal&>(*internal::collector_cache.counts);
  EventBuffer* b = local.buffer.get();
  if (b == nullptr || !b->fits(trace::kFreeRangeBytes)) [[unlikely]] return free_range_in_full(addr, bytes);
  b->free_range_fitting(addr, bytes);
  ++local.free_ranges_seen;
  if (!untracked_range(starts, off, bytes)) return log_free_range(local, starts, addr, bytes);
}

void Profiler::free_range_in_full(Address addr, std::uint64_t bytes) {
  // With a trace (and no hook checks, one space), inside the bracket, where free_range_traced
  // could not write in place (a full buffer, the thread's first event): the record, the count
  // and the log entry, as free_traced_slow does for a single free.
  if (const std::uint64_t* starts = traced_hook_starts_.load(std::memory_order_relaxed)) [[likely]] {
    const Address off = addr - space_begin_;
    if (at_in_the_space(off, bytes) && bytes != 0) [[likely]] {
      internal::CollectorLocal& local = collector_local(*state_);
      collector_buffer(*state_, local)->free_range(addr, bytes);
      ++local.free_ranges_seen;
      if (!untracked_range(starts, off, bytes)) log_free_range(local, starts, addr, bytes);
      return;
    }
  }
  if (!in_gc_.load(std::memory_order_relaxed)) [[unlikely]] {
    protocol_error("on_free_range", addr,
                   fmt::format("{} bytes freed outside gc_begin/gc_end; the event is dropped", bytes));
    return;
  }
  if (bytes == 0) return;
  if (!in_spaces(addr, bytes)) [[unlikely]] {
    protocol_error("on_free_range", addr,
                   fmt::format("[{:#x}, +{}) does not lie inside one registered space; the event is dropped", addr, bytes));
    return;
  }
  if (state_->checker) state_->checker->free_range(addr, bytes);
  auto& local = collector_local(*state_);
  if (EventBuffer* b = collector_buffer(*state_, local)) b->free_range(addr, bytes);
  ++local.free_ranges_seen;
  if (state_->tracker.may_hold_range(addr, bytes)) local.free_ranges.push_back({addr, bytes});
}

void Profiler::on_root(Address addr) {
  if (!in_gc_.load(std::memory_order_relaxed)) [[unlikely]] {
    protocol_error("on_root", addr, "a root marked outside gc_begin/gc_end; the mark is dropped");
    return;
  }
  if (!mark_object(addr)) [[unlikely]] {
    protocol_error("on_root", addr, "the root does not point into a registered space; the mark is dropped");
    return;
  }
  ++collector_local(*state_).roots_seen;
}

// The tracker's records asked in one batch (their addresses gathered, one virtual call); each
// answer becomes what the hooks would have logged for it (a free, a move carded where the cards
// can take it, else logged), so gc_end applies them through the same one pass.
void Profiler::report_survivors(const SurvivorOracle& oracle) {
  if (options_.fate_reports == FateReports::kHooks) {
    protocol_error("report_survivors", 0,
                   "ProfilerOptions::fate_reports is kHooks: the tracker follows the hooks' reports; the answers are "
                   "not asked for");
    return;
  }
  if (!in_gc_.load(std::memory_order_relaxed)) [[unlikely]] {
    protocol_error("report_survivors", 0, "called outside gc_begin/gc_end; the answers are not asked for");
    return;
  }
  ProfilerState& st = *state_;
  if (st.survivors_reported) {
    protocol_error("report_survivors", 0, "called twice in one GC; the second time is ignored");
    return;
  }
  st.survivors_reported = true;
  if (!st.survivors_this_gc) return;  // this GC's hooks report every move and free
  // The only space's cards, as the hooks' short paths use them (StaleTracker::card_move).
  std::uint32_t* const cards = st.tracker.hooks_may_card() ? st.tracker.hook_cards() : nullptr;
  const std::uint64_t* const starts = st.tracker.alloc_starts();
  std::vector<Address>& asked = st.survivor_asked;
  std::vector<Address>& answers = st.survivor_answers;
  // A heap with few tracked objects gets a scratch of their number.
  const std::size_t batch_size = std::min(kSurvivorBatch, st.tracker.records_upper_bound());
  if (batch_size == 0) return;
  if (asked.size() < batch_size) {
    asked.resize(batch_size);
    answers.resize(batch_size);
  }
  st.tracker.each_address_batch(std::span<Address>(asked).first(batch_size), [&](std::span<const Address> pre) {
    const std::span<Address> post = std::span<Address>(answers).first(pre.size());
    oracle.survivors(pre, post);
    for (std::size_t i = 0; i < pre.size(); ++i) {
      const Address from = pre[i], to = post[i];
      if (to == from) continue;
      if (to == 0) {
        st.survivor_frees.push_back(from);
        continue;
      }
      if (cards != nullptr && starts != nullptr && in_the_space(from, 0) && in_the_space(to, 0) &&
          internal::StaleTracker::card_move(cards, starts, from - space_begin_, to - space_begin_)) {
        ++st.survivor_carded;
        continue;
      }
      if (!in_spaces(to, 0)) [[unlikely]] {
        protocol_error("report_survivors", from,
                       fmt::format("survived at {:#x}: an address outside every registered space; the object keeps "
                                   "its place",
                                   to));
        continue;
      }
      st.survivor_moves.push_back({from, to});
    }
  });
}

Status Profiler::gc_end() {
  if (!in_gc_.load()) return make_error(ErrorCode::kProtocol, fmt::format("gc_end in epoch {} without gc_begin", epoch()));
  short_hook_starts_.store(nullptr, std::memory_order_relaxed);
  short_hook_cards_.store(nullptr, std::memory_order_relaxed);
  traced_hook_starts_.store(nullptr, std::memory_order_relaxed);
  ProfilerState& st = *state_;
  const auto e = static_cast<std::uint32_t>(epoch());
  // The merged logs keep their capacity from GC to GC.
  std::vector<internal::MoveLog>& moves = st.gc_moves;
  std::vector<internal::RangeMoveLog>& ranges = st.gc_ranges;
  std::vector<Address>& frees = st.gc_frees;
  std::vector<internal::FreeRangeLog>& free_ranges = st.gc_free_ranges;
  moves.clear();
  ranges.clear();
  frees.clear();
  free_ranges.clear();
  // One walk over the collector threads: each one's log (the first thread's first, so that its
  // vectors change hands) and its counters.
  std::uint64_t carded = 0;  // moves the hooks wrote into the tracker's cards instead of the logs
  st.each_collector([&](internal::CollectorLocal& local) {
    internal::gather_collector_log(local, moves, ranges, frees, free_ranges);
    carded += local.moves_carded;
    st.moves += local.moves_seen;
    st.frees += local.frees_seen;
    st.free_ranges += local.free_ranges_seen;
    st.root_marks += local.roots_seen;
    static_cast<internal::CollectorCounts&>(local) = {};
  });
  if (st.survivors_this_gc) {
    // The collector's answers replace whatever its hooks logged (the same facts, for the trace).
    moves.clear();
    ranges.clear();
    frees.clear();
    free_ranges.clear();
    if (st.survivors_reported) {
      moves.swap(st.survivor_moves);
      frees.swap(st.survivor_frees);
      carded += st.survivor_carded;
    } else {
      protocol_error("gc_end", 0,
                     "this GC took its fates from report_survivors (wants_object_events() was false), but it was "
                     "not called: the tracked objects keep their places");
    }
    st.survivor_moves.clear();
    st.survivor_frees.clear();
    st.survivor_carded = 0;
  }
  std::vector<const BitmapSnapshot*>& bits = st.held_bit_ptrs;
  bits.clear();
  for (const auto& h : st.held_bits) bits.push_back(h ? &*h : nullptr);
  const internal::StaleTracker::ApplyResult applied = st.tracker.apply(bits, e, moves, ranges, frees, free_ranges, carded,
                                                                                 st.runs_logged);
  st.reused_starts += applied.conflicts;
  st.tracker_indexed_gcs += applied.indexed;
  st.tracker_run_gcs += applied.by_runs;
  st.survivor_gcs += st.survivors_this_gc;
  release_held_bits(st);
  if (st.checker) st.checker->gc_end();

  // This cycle proves its survivors reachable only if it examined the whole heap.
  if (st.gc_kind != GcKind::kMinor) st.full_gc_after = std::uint64_t{e} + 1;
  st.stale_bytes = check_stale_at_gc_end(st, options_, e, st.stale);
  std::vector<internal::StaleObject> fresh;
  for (const internal::StaleObject& o : st.stale)
    if (o.is_new) fresh.push_back(o);
  std::vector<LeakGroup> groups;
  if (!fresh.empty()) {
    groups = internal::group_stale(st.stale, e, st.detections);
    internal::record_detections(groups, e, st.detections);
    std::erase_if(groups, [](const LeakGroup& g) { return g.new_objects == 0; });
    internal::rank_objects(fresh);
  }
  if (options_.heap_walker && !groups.empty()) search_leak_paths(st, options_, groups);
  {
    std::shared_lock<std::shared_mutex> lock(st.threads_mutex);
    for (const auto& t : st.threads) t->reset_cache();
  }
  {
    // The collectors' records, the stale objects, gc-end and what mutators wrote during the
    // bracket go to a file in one write(2), in this order, when gc_end returns.
    TraceWriter::Gather gather(st.writer.get());
    st.each_collector([](internal::CollectorLocal& local) {
      if (local.buffer) local.buffer->flush();
    });
    std::lock_guard<std::mutex> lock(st.control_mutex);
    if (st.control) {
      for (const internal::StaleObject& o : fresh) {
        std::uint8_t* p = st.control->begin_record(1 + 24);
        p = EventBuffer::put_u8(p, static_cast<std::uint8_t>(trace::Tag::kStale));
        p = EventBuffer::put_u64(p, o.addr);
        p = EventBuffer::put_u64(p, e - o.idle_epochs);
        EventBuffer::put_u64(p, e);
      }
      st.paths.write(*st.control, e);
      std::uint8_t* p = st.control->begin_record(1 + 16);
      p = EventBuffer::put_u8(p, static_cast<std::uint8_t>(trace::Tag::kGcEnd));
      p = EventBuffer::put_u64(p, e);
      EventBuffer::put_u64(p, st.bytes_at_gc);
      st.control->flush();
    }
    if (st.writer) {
      st.writer->set_epoch(e + 1);
      st.writer->release_held();  // what mutators wrote during the bracket, now in epoch e + 1
    }
    st.in_bracket = false;
    for (std::uint32_t id : st.deferred_thread_ends) write_thread_end(id);
    st.deferred_thread_ends.clear();
  }
  epoch_.store(e + 1, std::memory_order_release);
  in_gc_.store(false, std::memory_order_release);
  // Callbacks run last, outside every lock, so they may call back into the profiler.
  st.leaks_reported += fresh.size();
  if (options_.on_leak_group)
    for (LeakGroup& g : groups) {
      name_group(st, g);
      options_.on_leak_group(g);
    }
  if (options_.on_leak)
    for (const internal::StaleObject& o : fresh) options_.on_leak(make_report(st, o, e));
  return {};
}

Status Profiler::finish() {
  ProfilerState& st = *state_;
  if (st.finished) return trace_status();
  // A bracket left open (the runtime exits in the middle of a lazy sweep) is closed as it
  // stands, so what mutators wrote during it is not lost behind a missing gc-end.
  if (in_gc()) (void)gc_end();
  st.finished = true;
  if (!st.writer) return {};
  write_header_once();
  std::uint64_t bytes = 0;
  {
    std::shared_lock<std::shared_mutex> lock(st.threads_mutex);
    bytes = st.retired.bytes;
    for (const auto& t : st.threads) {
      if (EventBuffer* b = t->buffer()) b->flush();
      bytes += t->allocated_bytes.load(std::memory_order_relaxed);
    }
  }
  st.each_collector([](internal::CollectorLocal& local) {
    if (local.buffer) local.buffer->flush();
  });
  std::lock_guard<std::mutex> lock(st.control_mutex);
  std::uint8_t* p = st.control->begin_record(1 + 16);
  p = EventBuffer::put_u8(p, static_cast<std::uint8_t>(trace::Tag::kEnd));
  p = EventBuffer::put_u64(p, epoch());
  EventBuffer::put_u64(p, bytes);
  st.control->flush();
  Status s = st.writer->flush_sink();
  if (!s.ok()) return s;
  return st.writer->status();
}

Status Profiler::trace_status() const { return state_->writer ? state_->writer->status() : Status{}; }

ProfilerStats Profiler::stats() const {
  ProfilerState& st = *state_;
  ProfilerStats s;
  s.epoch = epoch();
  {
    std::shared_lock<std::shared_mutex> lock(st.threads_mutex);
    internal::ThreadTotals sum = st.retired;
    for (const auto& t : st.threads) sum.add(*t);
    s.objects_allocated = sum.objects;
    s.bytes_allocated = sum.bytes;
    s.barriers_executed = sum.barriers;
    s.barrier_cache_hits = sum.cache_hits;
    s.bitmap_marks = sum.marks;
    s.threads_attached = st.threads.size();
    s.threads_detached = st.retired_threads;
  }
  s.objects_tracked = st.objects_tracked.load(std::memory_order_relaxed);
  s.tracked_live = st.tracker.live();
  s.tracker_bytes = st.tracker.bytes();
  s.leaks_reported = st.leaks_reported;
  s.stale_bytes_threshold = st.stale_bytes;
  {
    std::lock_guard<std::mutex> lock(st.protocol_mutex);
    s.protocol_errors = st.protocol_errors;
  }
  s.bits_harvested = st.bits_harvested;
  s.path_searches = st.paths.searches();
  s.moves = st.moves;
  s.frees = st.frees;
  s.free_ranges = st.free_ranges;
  s.root_marks = st.root_marks;
  s.reused_starts = st.reused_starts;
  s.tracker_indexed_gcs = st.tracker_indexed_gcs;
  s.tracker_run_gcs = st.tracker_run_gcs;
  s.survivor_gcs = st.survivor_gcs;
  if (st.writer) {
    s.trace_bytes = st.writer->bytes_written();
    s.trace_chunks = st.writer->chunks_written();
    s.trace_chunks_lost = st.writer->chunks_lost();
  }
  return s;
}

std::vector<LeakReport> Profiler::possible_leaks() const {
  ProfilerState& st = *state_;
  std::vector<LeakReport> out;
  const auto e = static_cast<std::uint32_t>(epoch());
  // The current epoch has not ended; staleness is judged at the last completed one.
  if (e == 0) return out;
  std::vector<internal::StaleObject> stale;
  collect_stale(st, options_, e - 1, false, stale);
  internal::rank_objects(stale);
  for (const internal::StaleObject& o : stale) out.push_back(make_report(st, o, e - 1));
  return out;
}

std::vector<LeakGroup> Profiler::possible_leak_groups() const {
  ProfilerState& st = *state_;
  const auto e = static_cast<std::uint32_t>(epoch());
  if (e == 0) return {};
  std::vector<internal::StaleObject> stale;
  collect_stale(st, options_, e - 1, false, stale);
  std::vector<LeakGroup> groups = internal::group_stale(stale, e - 1, st.detections);
  for (LeakGroup& g : groups) name_group(st, g);
  return groups;
}

}  // namespace objprof
