// Spaces and collectors of the simulated heap. Why things are the way they are:
// - The copying collector is Cheney's: roots are forwarded, then a scan pointer walks to-space.
//   Large objects reached during the copy are marked and pushed on a stack, scanned in the
//   same loop. After the copy the from-space is walked linearly (it is contiguous) and every
//   object without a forwarding pointer is reported dead, adjacent ones as one on_free_range.
// - The mark-sweep collector marks into a side bitmap (in parallel with oneTBB on large heaps:
//   the mark bit is claimed with an atomic fetch_or, so each object is scanned exactly once,
//   and the sweep that follows is sequential, keeping on_free in address order), then sweeps the walkable space: dead
//   objects become free cells, runs of free cells are coalesced and put on size-segregated
//   free lists (16-byte classes up to 512 bytes, a size-ordered list above that), which the
//   allocator uses best fit before the bump region; a free run that ends at the bump pointer
//   gives its memory back to the bump region (sweep.cc).
// - When the free memory is there but in gaps too small, the mark-sweep heaps compact
//   (compact.cc; next_collection decides): a sweep would leave the survivors where they are.
// - The lazy sweep is the same sweep cut into steps, one per allocation, under the heap mutex
//   that already serialises allocation: no other lock, and the sweep cannot race the allocator
//   that reuses what it frees. Mutators running meanwhile touch only live objects, whose headers
//   never change after allocation; the sweep writes only dead objects' and free cells' headers.
#include "heap.h"
#include "free_runs.h"
#include "move_runs.h"

#include <fmt/core.h>
#include <tbb/parallel_for_each.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace objprof::sim {

namespace {
constexpr std::uint64_t kPage = 4096;
constexpr std::uint64_t kMaxLength = 1ull << 32;
std::uint64_t round_down(std::uint64_t v, std::uint64_t a) { return v & ~(a - 1); }
std::uint64_t round_up(std::uint64_t v, std::uint64_t a) { return (v + a - 1) & ~(a - 1); }
}  // namespace

const char* gc_policy_name(GcPolicy p) {
  switch (p) {
    case GcPolicy::kSemiSpace: return "semispace";
    case GcPolicy::kMarkSweep: return "marksweep";
    case GcPolicy::kLazySweep: return "lazysweep";
  }
  return "?";
}

GcKind gc_policy_kind(GcPolicy p) {
  switch (p) {
    case GcPolicy::kSemiSpace: return GcKind::kCopying;
    case GcPolicy::kMarkSweep: return GcKind::kFull;
    case GcPolicy::kLazySweep: return GcKind::kConcurrent;
  }
  return GcKind::kFull;
}

std::string format_bytes(std::uint64_t bytes) {
  if (bytes >= (1ull << 30)) return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / (1ull << 30));
  if (bytes >= (1ull << 20)) return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1ull << 20));
  if (bytes >= (1ull << 10)) return fmt::format("{:.1f} KiB", static_cast<double>(bytes) / (1ull << 10));
  return fmt::format("{} B", bytes);
}

Result<std::uint64_t> parse_size(const std::string& text) {
  if (text.empty()) return make_error(ErrorCode::kInvalidArgument, "empty size");
  std::uint64_t v = 0;
  std::size_t i = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    if (v > (~0ull) / 10 - 10) return make_error(ErrorCode::kInvalidArgument, "size too large: " + text);
    v = v * 10 + static_cast<std::uint64_t>(text[i] - '0');
  }
  if (i == 0) return make_error(ErrorCode::kInvalidArgument, "size must start with a number: '" + text + "'");
  std::string unit = text.substr(i);
  for (auto& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  unsigned shift = 0;
  if (unit.empty() || unit == "B") shift = 0;
  else if (unit == "K" || unit == "KB" || unit == "KIB") shift = 10;
  else if (unit == "M" || unit == "MB" || unit == "MIB") shift = 20;
  else if (unit == "G" || unit == "GB" || unit == "GIB") shift = 30;
  else return make_error(ErrorCode::kInvalidArgument, "unknown size unit '" + unit + "' in '" + text + "' (use K, M or G)");
  if (shift && v > (~0ull >> shift)) return make_error(ErrorCode::kInvalidArgument, "size too large: " + text);
  return v << shift;
}

Heap::Heap(const HeapOptions& options, Profiler* profiler)
    : options_(options), profiler_(profiler), events_(profiler) {
  types_.push_back(SimType{0, "<free>", false, false, {}, {}});
}

Heap::~Heap() { std::free(memory_); }

Result<std::unique_ptr<Heap>> Heap::create(const HeapOptions& options, Profiler* profiler) {
  if (options.heap_bytes < 64 * 1024)
    return make_error(ErrorCode::kInvalidArgument,
                      fmt::format("heap size {} is too small (at least 64 KiB)", format_bytes(options.heap_bytes)));
  if (options.heap_bytes > (64ull << 30))
    return make_error(ErrorCode::kInvalidArgument, "heap size above 64 GiB");
  if (options.large_object_threshold < 64)
    return make_error(ErrorCode::kInvalidArgument, "large-object threshold must be at least 64 bytes");
  if (!(options.compact_free_fraction >= 0))  // also refuses NaN
    return make_error(ErrorCode::kInvalidArgument, "compact_free_fraction must be at least 0");
  std::unique_ptr<Heap> h(new Heap(options, profiler));
  OBJPROF_RETURN_IF_ERROR(h->init());
  return h;
}

Status Heap::init() {
  options_.heap_bytes = round_down(options_.heap_bytes, kPage);
  memory_ = std::aligned_alloc(kPage, options_.heap_bytes);
  if (!memory_) return make_error(ErrorCode::kIo, "cannot reserve a heap of " + format_bytes(options_.heap_bytes));
  if (options_.pretouch) std::memset(memory_, 0, options_.heap_bytes);
  base_ = reinterpret_cast<Address>(memory_);
  const std::uint64_t los = round_down(options_.heap_bytes / 4, kPage);
  const std::uint64_t main = options_.heap_bytes - los;
  if (options_.gc == GcPolicy::kSemiSpace) {
    // The large objects between the two halves: what the mutators reach between two GCs (the
    // half copied into, and the large objects) is then one range of the heap, the window the
    // profiler's harvests scan (set_space_window).
    const std::uint64_t half = round_down(main / 2, kPage);
    from_begin_ = base_;
    from_end_ = base_ + half;
    los_begin_ = from_end_;
    los_end_ = los_begin_ + los;
    to_begin_ = los_end_;
    to_end_ = to_begin_ + half;
    bump_ = from_begin_;
  } else {
    ms_begin_ = ms_bump_ = base_;
    ms_end_ = base_ + main;
    los_begin_ = base_ + main;
    los_end_ = base_ + options_.heap_bytes;
  }
  los_free_[los_begin_] = los;
  marks_.assign(options_.heap_bytes / 8 / 64 + 1, 0);
  if (profiler_) {
    auto space = HeapSpace::make(base_, base_ + options_.heap_bytes, 8, "sim-heap");
    if (!space.ok()) return space.error();
    auto id = profiler_->add_space(*space);
    if (!id.ok()) return id.error();
    space_id_ = *id;
    if (options_.gc == GcPolicy::kSemiSpace) {  // before any object: these replace the defaults
      profiler_->set_space_used_from(space_id_, reachable_begin() - base_);
      profiler_->set_space_used(space_id_, reachable_end() - base_);
    }
  }
  return {};
}

Result<std::uint32_t> Heap::add_type(SimType type) {
  type.id = static_cast<std::uint32_t>(types_.size());
  if (profiler_) {
    TypeInfo ti;
    ti.id = type.id;
    ti.name = type.name;
    ti.is_array = type.is_array;
    ti.instance_size = kHeaderBytes + (type.is_array ? 0 : kSlotBytes * type.num_slots());
    OBJPROF_RETURN_IF_ERROR(profiler_->define_type(ti));
  }
  types_.push_back(std::move(type));
  return types_.back().id;
}

void Heap::attach_mutator(Mutator* m) {
  std::unique_lock lk(mu_);
  cv_.wait(lk, [&] { return !stop_requested_.load(); });
  mutators_.push_back(m);
  ++running_;
}

void Heap::detach_mutator(Mutator* m) {
  std::unique_lock lk(mu_);
  // A GC may be waiting for this thread: leaving counts as parking for good.
  mutators_.erase(std::remove(mutators_.begin(), mutators_.end(), m), mutators_.end());
  --running_;
  // Nobody is left to allocate, so nobody would sweep: end the GC now, while the profiler
  // still takes its frees (an embedder's Profiler::finish would close the bracket without them).
  if (mutators_.empty() && sweeping_) (void)finish_sweep_locked();
  cv_.notify_all();
}

void Heap::add_root_provider(RootProvider* p) {
  std::lock_guard lk(mu_);
  root_providers_.push_back(p);
}

void Heap::remove_root_provider(RootProvider* p) {
  std::lock_guard lk(mu_);
  root_providers_.erase(std::remove(root_providers_.begin(), root_providers_.end(), p), root_providers_.end());
}

void Heap::park_locked(std::unique_lock<std::mutex>& lk) {
  --running_;
  cv_.notify_all();
  cv_.wait(lk, [&] { return !stop_requested_.load(); });
  ++running_;
}

void Heap::park_slow(Mutator&) {
  std::unique_lock lk(mu_);
  if (stop_requested_.load()) park_locked(lk);
}

Status Heap::collect(Mutator&) {
  std::unique_lock lk(mu_);
  while (stop_requested_.load()) park_locked(lk);
  return collect_locked(lk);
}

Status Heap::compact(Mutator&) {
  std::unique_lock lk(mu_);
  while (stop_requested_.load()) park_locked(lk);
  return collect_locked(lk, Collection::kCompact);
}

Status Heap::finish_sweep(Mutator&) {
  std::unique_lock lk(mu_);
  while (stop_requested_.load()) park_locked(lk);
  return sweeping_ ? finish_sweep_locked() : Status{};
}

bool Heap::sweeping() const {
  std::lock_guard lk(mu_);
  return sweeping_;
}

Status Heap::collect_locked(std::unique_lock<std::mutex>& lk, Collection c) {
  stop_requested_.store(true);
  --running_;
  cv_.wait(lk, [&] { return running_ == 0; });
  Status st = do_collect(c);
  stop_requested_.store(false);
  ++running_;
  cv_.notify_all();
  return st;
}

std::string Heap::oom_message(std::uint64_t size, std::uint32_t type, bool compacted) const {
  std::string free;
  if (options_.gc != GcPolicy::kSemiSpace && size < options_.large_object_threshold) {
    const FreeSpace f = free_space();
    free = fmt::format("; {} free, the largest gap {}", format_bytes(f.free_bytes), format_bytes(f.largest_gap));
  }
  return fmt::format(
      "out of memory: the {} heap of {} ({} bytes; {} for large objects) cannot fit a {}-byte {} even after "
      "a full GC{} ({} live after the last GC{}); run with a larger --heap",
      gc_policy_name(options_.gc), format_bytes(options_.heap_bytes), options_.heap_bytes,
      format_bytes(los_end_ - los_begin_), size, type < types_.size() ? types_[type].name : "object",
      compacted ? " and a compaction" : "", format_bytes(stats_.live_bytes_after_last_gc), free);
}

bool Heap::next_collection(std::uint64_t size, bool swept, bool compacted, Collection& c) const {
  c = Collection::kSweep;
  if (compacted) return false;  // every free byte is in the bump region: nothing else can help
  // The semispace heap and the large-object space (never compacted): one collection.
  if (options_.gc == GcPolicy::kSemiSpace || size >= options_.large_object_threshold) return !swept;
  const FreeSpace f = free_space();
  c = Collection::kCompact;
  // A sweep ran and the object still finds no gap: compacting joins the free bytes into one,
  // which helps only if they are enough.
  if (swept) return f.free_bytes >= cell_size(size);
  // Much of the space is free already, in gaps too small: a sweep would free the garbage
  // between the same survivors and leave the gaps about as small (the requests workload on
  // the first-fit-from-bump allocator: 1 MiB of 1.5 MiB free in gaps of at most 9 KiB, each
  // sweep freeing less than the one before, then out of memory; docs/results.md).
  if (static_cast<double>(f.free_bytes) < options_.compact_free_fraction * static_cast<double>(ms_end_ - ms_begin_))
    c = Collection::kSweep;
  return true;
}

Result<Address> Heap::allocate(Mutator& m, std::uint32_t site, std::uint32_t type, std::uint64_t length) {
  if (type == kFreeCellType || type >= types_.size())
    return make_error(ErrorCode::kInvalidArgument, fmt::format("allocation of unknown type id {}", type));
  const SimType& t = types_[type];
  if (t.is_array && length > kMaxLength)
    return make_error(ErrorCode::kOutOfRange, fmt::format("array length {} of {} is too large", length, t.name));
  const std::uint64_t slots = t.is_array ? length : t.num_slots();
  const std::uint64_t size = kHeaderBytes + kSlotBytes * slots;
  std::unique_lock lk(mu_);
  bool swept = false, compacted = false;  // the collections this allocation ran
  for (;;) {
    while (stop_requested_.load()) park_locked(lk);
    if (sweeping_) OBJPROF_RETURN_IF_ERROR(sweep_step_locked());
    Address a = try_allocate_locked(size);
    // The run of free cells the sweep is still coalescing may hold the room already: list it.
    if (a == 0 && sweeping_ && size < options_.large_object_threshold && list_open_run(cell_size(size)))
      a = try_allocate_locked(size);
    if (a != 0) {
      std::memset(reinterpret_cast<void*>(a), 0, size);
      ObjHeader& h = header(a);
      h.type = type;
      h.flags = 0;
      h.word = t.is_array ? length : 0;
      ++stats_.objects_allocated;
      stats_.bytes_allocated += size;
      if (sweeping_) {
        // Inside the bracket: below sweep_end_ only in a cell the sweep already passed.
        ++gc_.allocated_in_sweep;
        ++stats_.objects_allocated_in_sweep;
        if (a < sweep_end_) ++stats_.objects_reused_in_sweep;
      }
      if (profiler_ && m.thread) profiler_->on_alloc(*m.thread, site, type, a, size);
      return a;
    }
    // The unswept rest may hold the room: sweep on, a step at a time (the loop's next step),
    // until the object fits or the sweep is over, before collecting again.
    if (sweeping_) continue;
    Collection c = Collection::kSweep;
    if (!next_collection(size, swept, compacted, c))
      return make_error(ErrorCode::kOutOfRange, oom_message(size, type, compacted));
    OBJPROF_RETURN_IF_ERROR(collect_locked(lk, c));
    (c == Collection::kCompact ? compacted : swept) = true;
  }
}

Address Heap::try_allocate_locked(std::uint64_t size) {
  if (size >= options_.large_object_threshold) {
    const Address a = los_allocate(round_up(size, kPage));
    if (a) {
      los_objects_.push_back(a);
      los_live_bytes_ += round_up(size, kPage);
      ++stats_.large_objects_allocated;
    }
    return a;
  }
  if (options_.gc == GcPolicy::kSemiSpace) {
    if (from_end_ - bump_ < size) return 0;
    const Address a = bump_;
    bump_ += size;
    return a;
  }
  return ms_allocate(cell_size(size));
}

Address Heap::los_allocate(std::uint64_t size) {
  for (auto it = los_free_.begin(); it != los_free_.end(); ++it) {
    if (it->second < size) continue;
    const Address a = it->first;
    const std::uint64_t rest = it->second - size;
    los_free_.erase(it);
    if (rest) los_free_[a + size] = rest;
    return a;
  }
  return 0;
}

void Heap::los_free(Address a, std::uint64_t size) {
  auto [it, inserted] = los_free_.emplace(a, size);
  (void)inserted;
  auto next = std::next(it);
  if (next != los_free_.end() && it->first + it->second == next->first) {
    it->second += next->second;
    los_free_.erase(next);
  }
  if (it != los_free_.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second == it->first) {
      prev->second += it->second;
      los_free_.erase(it);
    }
  }
}

bool Heap::test_and_mark(Address a) {
  const std::uint64_t g = (a - base_) >> 3;
  std::uint64_t& w = marks_[g >> 6];
  const std::uint64_t bit = 1ull << (g & 63);
  if (w & bit) return false;
  w |= bit;
  return true;
}

bool Heap::test_and_mark_atomic(Address a) {
  const std::uint64_t g = (a - base_) >> 3;
  std::atomic_ref<std::uint64_t> w(marks_[g >> 6]);
  const std::uint64_t bit = 1ull << (g & 63);
  if (w.load(std::memory_order_relaxed) & bit) return false;  // common when sharing is high
  return (w.fetch_or(bit, std::memory_order_relaxed) & bit) == 0;
}

void Heap::mark_frame_roots() {
  for (Mutator* m : mutators_) {
    if (!m->roots) continue;
    m->roots->visit_named_roots([&](RootKind kind, std::uint64_t, Address target) {
      if (kind == RootKind::kStackFrame) profiler_->on_root(target);
    });
  }
}

void Heap::visit_all_roots(const RootFn& fn) {
  for (Mutator* m : mutators_)
    if (m->roots) m->roots->visit_roots(fn);
  for (RootProvider* p : root_providers_) p->visit_roots(fn);
  for (auto& h : handles_) fn(h);
}

namespace {
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Adds the wall and CPU time of one piece of GC work (a mark, a sweep step, gc_end) to its GC.
// A lazy sweep step counts its wall time as CPU time: it never blocks, and the thread CPU clock
// is a system call that would cost as much as a step of a few cells (alloc/lazysweep in
// bench_sim_gc lost ~20% to it).
class WorkClock {
 public:
  explicit WorkClock(GcInfo& info, bool cpu_clock = true)
      : info_(info), cpu_clock_(cpu_clock), cpu0_(cpu_clock ? thread_cpu_seconds() : 0) {}
  ~WorkClock() {
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    info_.seconds += wall;
    info_.cpu_seconds += cpu_clock_ ? thread_cpu_seconds() - cpu0_ : wall;
  }
  WorkClock(const WorkClock&) = delete;
  WorkClock& operator=(const WorkClock&) = delete;

 private:
  GcInfo& info_;
  bool cpu_clock_;
  double cpu0_;
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
};
}  // namespace

// The collector's own state says what survived: the mark bits (over the whole heap, kept until
// the next GC begins) for the mark-sweep and large-object spaces, the plan for a compaction's
// survivors, the forwarding header for a semispace's (the from-space is not reused before the
// next GC).
inline Address Heap::survivor_of(Address a) const noexcept {
  if (a - base_ >= options_.heap_bytes) return 0;  // no object of this heap
  if (options_.gc == GcPolicy::kSemiSpace && !in_los(a)) {
    const ObjHeader& h = header(a);
    return (h.flags & kForwarded) ? h.word : 0;
  }
  if (!is_marked(a)) return 0;
  if (!gc_.compacted || in_los(a)) return a;
  const auto it = std::lower_bound(compact_from_.begin(), compact_from_.end(), a);
  if (it == compact_from_.end() || *it != a) return 0;
  return compact_to_[static_cast<std::size_t>(it - compact_from_.begin())];
}

class Heap::Survivors final : public SurvivorOracle {
 public:
  explicit Survivors(const Heap& heap) : heap_(heap) {}
  void survivors(std::span<const Address> pre_gc, std::span<Address> post_gc) const noexcept override {
    for (std::size_t i = 0; i < pre_gc.size(); ++i) post_gc[i] = heap_.survivor_of(pre_gc[i]);
  }

 private:
  const Heap& heap_;
};

Status Heap::do_collect(Collection c) {
  // One bracket at a time, and the mark needs a space whose dead objects are all reported.
  if (sweeping_) OBJPROF_RETURN_IF_ERROR(finish_sweep_locked());
  gc_ = GcInfo{};
  gc_.policy = options_.gc;
  gc_.compacted = c == Collection::kCompact && options_.gc != GcPolicy::kSemiSpace;
  {
    WorkClock clock(gc_);
    const GcKind kind = gc_.compacted ? GcKind::kCompacting : gc_policy_kind(options_.gc);
    if (profiler_) OBJPROF_RETURN_IF_ERROR(profiler_->gc_begin(kind));
    // Each move and free reported this GC, or the survivors' answers below instead.
    events_ = profiler_ && profiler_->wants_object_events() ? profiler_ : nullptr;
    std::fill(marks_.begin(), marks_.end(), 0);
    if (options_.gc == GcPolicy::kSemiSpace) {
      collect_semispace(gc_);
    } else {
      const auto mark_start = std::chrono::steady_clock::now();
      mark_marksweep();
      gc_.mark_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - mark_start).count();
      if (gc_.compacted) {
        compact_marksweep(gc_);  // stop-the-world in every mode: objects move
      } else {
        start_sweep();
        // The lazy collector leaves the space to the allocations' steps (sweeping_ from here).
        if (options_.gc == GcPolicy::kMarkSweep) (void)sweep_cells(~0ull);
      }
    }
    sweep_los(gc_);  // eagerly in every mode: few objects, and its free spans are a map
    // Every object is at its final place now, and the mutators resume only after this (a lazy
    // sweep's steps run in their allocations, later).
    if (profiler_ && !profiler_->wants_object_events()) {
      const Survivors answers(*this);
      profiler_->report_survivors(answers);
    }
    if (profiler_ && options_.mark_frame_roots) mark_frame_roots();
  }
  if (options_.gc == GcPolicy::kLazySweep && !gc_.compacted) {
    sweeping_ = true;
    return {};
  }
  return end_gc();
}

Status Heap::sweep_step_locked() {
  bool done = false;
  {
    WorkClock clock(gc_, /*cpu_clock=*/false);
    done = sweep_cells(std::max<std::uint64_t>(options_.lazy_sweep_step, 1));
    ++gc_.sweep_steps;
  }
  return done ? end_gc() : Status{};
}

Status Heap::finish_sweep_locked() {
  {
    WorkClock clock(gc_);
    (void)sweep_cells(~0ull);
    ++gc_.sweep_steps;
  }
  return end_gc();
}

// Closes the GC in gc_: the profiler's bracket, the heap's totals, on_gc.
Status Heap::end_gc() {
  Status st;
  {
    WorkClock clock(gc_);
    if (profiler_) st = profiler_->gc_end();
  }
  sweeping_ = false;
  gc_.index = ++stats_.gcs;
  stats_.gc_seconds += gc_.seconds;
  stats_.gc_cpu_seconds += gc_.cpu_seconds;
  stats_.objects_freed += gc_.freed_objects;
  stats_.bytes_freed += gc_.freed_bytes;
  stats_.objects_moved += gc_.moved_objects;
  stats_.sweep_steps += gc_.sweep_steps;
  stats_.compactions += gc_.compacted;
  stats_.live_bytes_after_last_gc = gc_.live_bytes_after;
  const FreeSpace f = free_space();
  gc_.free_bytes_after = f.free_bytes;
  gc_.largest_free_after = f.largest_gap;
  if (on_gc) on_gc(gc_);
  return st;
}

void Heap::collect_semispace(GcInfo& info) {
  Address free = to_begin_;
  auto forward = [&](std::uint64_t& slot) {
    const Address obj = slot;
    if (obj == 0) return;
    if (in_los(obj)) {
      if (test_and_mark(obj)) mark_stack_.push_back(obj);
      return;
    }
    ObjHeader& h = header(obj);
    if (h.flags & kForwarded) {
      slot = h.word;
      return;
    }
    const std::uint64_t size = object_size(obj);
    const Address to = free;
    free += size;
    std::memcpy(reinterpret_cast<void*>(to), reinterpret_cast<const void*>(obj), size);
    h.flags |= kForwarded;
    h.word = to;
    ++info.moved_objects;
    slot = to;
  };
  auto scan_object = [&](Address obj) { for_each_ref_slot(obj, forward); };
  visit_all_roots(forward);
  Address scan = to_begin_;
  while (scan < free || !mark_stack_.empty()) {
    while (scan < free) {
      scan_object(scan);
      scan += object_size(scan);
    }
    while (!mark_stack_.empty()) {
      const Address obj = mark_stack_.back();
      mark_stack_.pop_back();
      scan_object(obj);
    }
  }
  // Moves and deaths, in one walk of the from-space after the copy: the copy loop carries
  // nothing of the hooks (inlined into it, the hook's short path made it 10 % slower without a
  // profiler: listleak-semispace `off`, 2.07-2.17 -> 2.35-2.41 ms per run, the same
  // instructions). With ranges the profiler is told the whole evacuated area at once: a free
  // range frees what the GC did not move, so a copying collector need not find its dead, and
  // the walk only counts them for the collector's own statistics (without, it reports each).
  const bool evacuate = events_ && options_.free_ranges;
  const DeathReports deaths = events_ && !evacuate ? DeathReports::kEach : DeathReports::kNone;
  const MoveReports moves = move_reports(events_, options_.move_ranges);
  with_report_mode(deaths, [&](auto d) {
    with_report_mode(moves, [&](auto m) { walk_from_space<decltype(d)::value, decltype(m)::value>(info); });
  });
  if (evacuate && bump_ > from_begin_) events_->on_free_range(from_begin_, bump_ - from_begin_);
  std::swap(from_begin_, to_begin_);
  std::swap(from_end_, to_end_);
  bump_ = free;
  info.live_bytes_after = bump_ - from_begin_;
  // Until the next GC the mutators reach only the half copied into and the large objects
  // (inside the bracket, with a window of the space: the call cannot fail).
  if (profiler_) (void)profiler_->set_space_window(space_id_, reachable_begin() - base_, reachable_end() - base_);
}

// The from-space after a copy: the dead counted, and with kEach each reported (on_free); the
// survivors' moves reported (kMoves), in address order: each as an on_move, or as runs
// (kRuns: objects next to each other that the copy put next to each other go as one
// on_move_range, a lone survivor as one on_move). The walk is the collector's own (it counts
// the dead), a run's bounds stay in its registers, and a survivor that continues a run costs
// a compare. One loop per mode, so that the one that only counts (no profiler) carries
// nothing of the hooks.
template <DeathReports kMode, MoveReports kMoves>
void Heap::walk_from_space(GcInfo& info) {
  FreeRuns<kMode> deaths(events_);
  // A local: the hooks are calls, and the loop would reload the member at every object.
  const SimType* const types = types_.data();
  auto copy_size = [types](const ObjHeader& h) {  // a survivor's, from its copy's header
    return kHeaderBytes + kSlotBytes * slot_count(header(h.word), types);
  };
  const Address end = bump_;
  Address a = from_begin_;
  if (a >= end) return;
  // A do-while: as a for loop GCC tested the bound at the top and jumped back from the bottom,
  // one instruction more per object of the walk without a profiler.
  do {
    const ObjHeader& h = header(a);
    if (h.flags & kForwarded) {
      const std::uint64_t size = copy_size(h);
      if constexpr (kMoves == MoveReports::kRuns) {
        const Address from = a, to = h.word;
        Address to_end = to + size;
        a += size;
        while (a < end && (header(a).flags & kForwarded) && header(a).word == to_end) {
          const std::uint64_t next = copy_size(header(a));
          a += next;
          to_end += next;
        }
        report_move_run(*events_, from, to, a - from, size);
      } else {
        if constexpr (kMoves == MoveReports::kEach) events_->on_move(a, h.word);
        a += size;
      }
    } else {
      const std::uint64_t size = kHeaderBytes + kSlotBytes * slot_count(h, types);
      deaths.dead(a);
      ++info.freed_objects;
      info.freed_bytes += size;
      a += size;
    }
  } while (a < end);
}

void Heap::mark_serial() {
  auto mark = [&](std::uint64_t& slot) {
    if (slot != 0 && test_and_mark(slot)) mark_stack_.push_back(slot);
  };
  visit_all_roots(mark);
  while (!mark_stack_.empty()) {
    const Address obj = mark_stack_.back();
    mark_stack_.pop_back();
    for_each_ref_slot(obj, mark);
  }
}

void Heap::mark_parallel() {
  // Roots are visited on this thread; the graph below them is traced by TBB workers. A work
  // item is a batch of objects: its task traces depth-first on a local stack and hands the
  // oldest kDonate entries (the broadest pending subgraphs) to the feeder whenever the stack
  // reaches 2 * kDonate, so idle workers find work to steal without every object paying for
  // a task of its own (one task per object made the marker ~10x slower than the serial one).
  // Long chains keep a depth-first stack shallow and so never donate: their parallelism is
  // in the roots, which are therefore cut into at least 8 seed batches per worker (when
  // there are that many) rather than batches of a fixed size, which left a few hundred roots
  // in one or two tasks and the other workers idle. Mutators are stopped, so slots are only
  // read here.
  constexpr std::size_t kDonate = 64, kMaxSeed = 256;
  using Batch = std::vector<Address>;
  mark_stack_.clear();
  visit_all_roots([&](std::uint64_t& slot) {
    if (slot != 0 && test_and_mark(slot)) mark_stack_.push_back(slot);
  });
  const std::size_t workers = static_cast<std::size_t>(std::max(1, tbb::this_task_arena::max_concurrency()));
  const std::size_t seed = std::clamp<std::size_t>(mark_stack_.size() / (8 * workers), 1, kMaxSeed);
  std::vector<Batch> seeds;
  for (std::size_t i = 0; i < mark_stack_.size(); i += seed)
    seeds.emplace_back(mark_stack_.begin() + static_cast<std::ptrdiff_t>(i),
                       mark_stack_.begin() + static_cast<std::ptrdiff_t>(std::min(i + seed, mark_stack_.size())));
  tbb::parallel_for_each(seeds.begin(), seeds.end(), [&](const Batch& batch, tbb::feeder<Batch>& feeder) {
    Batch stack(batch);
    while (!stack.empty()) {
      const Address obj = stack.back();
      stack.pop_back();
      for_each_ref_slot(obj, [&](std::uint64_t child) {
        if (child != 0 && test_and_mark_atomic(child)) stack.push_back(child);
      });
      if (stack.size() >= 2 * kDonate) {
        feeder.add(Batch(stack.begin(), stack.begin() + kDonate));
        stack.erase(stack.begin(), stack.begin() + kDonate);
      }
    }
  });
  mark_stack_.clear();
}

// Debian's oneTBB is not built with ThreadSanitizer, so TSan cannot see the task hand-off
// inside tbb::parallel_for_each and would report the marker's reads of what the collector
// thread wrote before it as races. Under TSan the marker therefore runs on one thread.
#if defined(__SANITIZE_THREAD__)
constexpr bool kParallelMarkAvailable = false;
#else
constexpr bool kParallelMarkAvailable = true;
#endif

void Heap::mark_marksweep() {
  if (kParallelMarkAvailable && options_.heap_bytes >= options_.parallel_mark_min_heap) mark_parallel();
  else mark_serial();
}

void Heap::sweep_los(GcInfo& info) {
  std::size_t out = 0;
  for (Address a : los_objects_) {
    if (is_marked(a)) {
      los_objects_[out++] = a;
      continue;
    }
    const std::uint64_t size = object_size(a);
    if (events_) events_->on_free(a);
    ++info.freed_objects;
    info.freed_bytes += size;
    los_live_bytes_ -= round_up(size, kPage);
    los_free(a, round_up(size, kPage));
  }
  los_objects_.resize(out);
  info.live_bytes_after += los_live_bytes_;
}

void RootProvider::visit_named_roots(const NamedRootFn& fn) {
  std::uint64_t n = 0;
  visit_roots([&](std::uint64_t& slot) {
    if (slot != 0) fn(RootKind::kOther, n, slot);
    ++n;
  });
}

std::string RootProvider::root_name(RootKind kind, std::uint64_t token) const {
  return fmt::format("{} root {}", root_kind_name(kind), token);
}

namespace {
// A named root's token: which source (mutator, root provider, the handles) in its top 16 bits,
// the source's own token below.
constexpr unsigned kSourceShift = 48;
constexpr std::uint64_t kLocalMask = (std::uint64_t{1} << kSourceShift) - 1;
}  // namespace

void Heap::visit_named_roots(const NamedRootFn& fn) {
  // Sources: root providers 0..P-1, the handles P, mutators P+1... The longest-lived roots
  // come first: the search keeps the first of equally short paths, and a leak held both by a
  // static and by a frame that will return is the static's to fix.
  const std::uint64_t providers = root_providers_.size();
  auto from = [&](std::uint64_t s) {
    return [&fn, s](RootKind kind, std::uint64_t token, Address target) {
      fn(kind, (s << kSourceShift) | (token & kLocalMask), target);
    };
  };
  for (std::uint64_t p = 0; p < providers; ++p) root_providers_[p]->visit_named_roots(from(p));
  for (std::size_t i = 0; i < handles_.size(); ++i)
    if (handles_[i] != 0) fn(RootKind::kHandle, (providers << kSourceShift) | i, handles_[i]);
  for (std::size_t m = 0; m < mutators_.size(); ++m)
    if (mutators_[m]->roots) mutators_[m]->roots->visit_named_roots(from(providers + 1 + m));
}

std::string Heap::root_name(RootKind kind, std::uint64_t token) const {
  const std::uint64_t source = token >> kSourceShift, local = token & kLocalMask;
  const std::uint64_t providers = root_providers_.size();
  if (source < providers) return root_providers_[source]->root_name(kind, local);
  if (source == providers) return fmt::format("handle {}", local);
  const std::uint64_t m = source - providers - 1;
  if (m < mutators_.size() && mutators_[m]->roots) return mutators_[m]->roots->root_name(kind, local);
  return fmt::format("{} root {}", root_kind_name(kind), local);
}

void Heap::for_each_object(const std::function<void(Address)>& fn) const {
  if (options_.gc == GcPolicy::kSemiSpace) {
    for (Address a = from_begin_; a < bump_; a += object_size(a)) fn(a);
  } else {
    for (Address a = ms_begin_; a < ms_bump_;) {
      const ObjHeader& h = header(a);
      if (h.type == kFreeCellType) {
        a += h.word;
      } else {
        fn(a);
        a += cell_size(object_size(a));
      }
    }
  }
  for (Address a : los_objects_) fn(a);
}

HeapStats Heap::stats() const {
  std::lock_guard lk(mu_);
  return stats_;
}

}  // namespace objprof::sim
