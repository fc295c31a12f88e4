// The mark-sweep space's free memory: its sweep and its allocator. The sweep is shared by the
// stop-the-world collector (one call covers the whole space) and the lazy one (a bounded step
// per allocation, docs/sim.md):
// - Dead objects become free cells (type 0, their cell size in word 1) as they are reported
//   (the cells between two live objects, when they held a dead one, with one on_free_range), so
//   the space stays walkable at every step. The dead of a run still open at the end of a step
//   are reported when a live object or the sweep's end closes the run, or when an allocation
//   takes it (list_open_run), whichever comes first: no mutator can reuse them before that, and
//   a report per step cut every long dead stretch into 4 KiB ranges (one per step).
// - Runs of free cells are coalesced and put on the size-segregated free lists only when the
//   run closes. A run still open at the end of a step stays open into the next step (so runs
//   coalesce across steps), unless an allocation needs it now (list_open_run): a long dead
//   stretch would otherwise keep its memory from the mutators until the sweep leaves it. The
//   lists only ever hold memory below the cursor, which is what keeps a lazy sweep from meeting
//   an object allocated during it.
// - A run that ends where the sweep ends goes back to the bump region, unless the mutators
//   bump-allocated past that point during a lazy sweep; then it is an ordinary free span.
// The allocator is best fit, with the bump region last (ms_allocate says why).
#include "heap.h"
#include "free_runs.h"

#include <algorithm>

namespace objprof::sim {

void Heap::start_sweep() {
  // Every free cell is below ms_bump_ and will be swept (and relisted) again.
  for (auto& l : small_free_) l.clear();
  large_free_.clear();
  sweep_cursor_ = ms_begin_;
  sweep_end_ = ms_bump_;
  sweep_run_ = 0;
  sweep_unreported_ = 0;
}

void Heap::list_free(Address a, std::uint64_t bytes) {
  header(a) = ObjHeader{kFreeCellType, 0, bytes};
  if (bytes / 16 < kSmallClasses) small_free_[bytes / 16].push_back(a);
  else large_free_.emplace(bytes, a);
}

void Heap::close_run(Address end) {
  if (sweep_run_ == 0) return;
  list_free(sweep_run_, end - sweep_run_);
  sweep_run_ = 0;
}

bool Heap::list_open_run(std::uint64_t cell) {
  if (sweep_run_ == 0 || sweep_cursor_ - sweep_run_ < cell) return false;
  if (sweep_unreported_ != 0) {  // its dead reach the profiler before the mutators reuse them
    events_->on_free_range(sweep_unreported_, sweep_cursor_ - sweep_unreported_);
    sweep_unreported_ = 0;
  }
  close_run(sweep_cursor_);  // every cell in [run, cursor) is swept and free
  return true;
}

bool Heap::sweep_cells(std::uint64_t budget) {
  return with_report_mode(death_reports(events_, options_.free_ranges),
                          [&](auto mode) { return sweep_cells_loop<decltype(mode)::value>(budget); });
}

template <DeathReports kMode>
bool Heap::sweep_cells_loop(std::uint64_t budget) {
  const Address stop = budget >= sweep_end_ - sweep_cursor_ ? sweep_end_ : sweep_cursor_ + budget;
  Address a = sweep_cursor_;
  // Reported before this step returns: mutators may allocate in the runs it frees.
  FreeRuns<kMode == DeathReports::kEach ? DeathReports::kEach : DeathReports::kNone> each(events_);
  // kRuns: the cells since the last live object (or since the dead the last step left
  // unreported, or this step's start) go to the profiler as one on_free_range when a live object
  // or the sweep's end closes them and they held a dead object, free cells and all (a range may
  // cover free memory). The loop's own count of the dead tells whether they did, so a dead
  // object costs the sweep nothing more than without a profiler (keeping each run's first dead
  // object cost three instructions per dead object); `reported` starts at a count the step never
  // reaches when the last step left its dead unreported.
  Address run_begin = sweep_unreported_ != 0 ? sweep_unreported_ : a;
  // The step's dead, counted in a local: the header writes below may alias the members.
  std::uint64_t freed = 0, reported = sweep_unreported_ != 0 ? ~std::uint64_t{0} : 0;
  sweep_unreported_ = 0;
  auto report_run = [&](Address end) {
    if constexpr (kMode == DeathReports::kRuns) {
      if (freed != reported) {
        events_->on_free_range(run_begin, end - run_begin);
        reported = freed;
      }
    }
  };
  while (a < stop) {
    ObjHeader& h = header(a);
    std::uint64_t cell;
    if (h.type == kFreeCellType) {
      cell = h.word;
      if (sweep_run_ == 0) sweep_run_ = a;
    } else {
      const std::uint64_t size = object_size(a);
      cell = cell_size(size);
      if (is_marked(a)) {
        report_run(a);
        run_begin = a + cell;
        close_run(a);
        gc_.live_bytes_after += cell;
      } else {
        each.dead(a);
        ++freed;
        gc_.freed_bytes += size;
        h.type = kFreeCellType;
        h.word = cell;
        if (sweep_run_ == 0) sweep_run_ = a;
      }
    }
    a += cell;
  }
  gc_.freed_objects += freed;
  sweep_cursor_ = a;  // may pass `stop` by the rest of the last cell
  if (sweep_cursor_ < sweep_end_) {
    // The open run's dead wait for the next step (or list_open_run): nothing reuses them before.
    if constexpr (kMode == DeathReports::kRuns)
      if (freed != reported) sweep_unreported_ = run_begin;
    return false;
  }
  report_run(a);
  if (sweep_run_ != 0) {
    if (ms_bump_ == sweep_end_) ms_bump_ = sweep_run_;  // the trailing free run: bump space again
    else close_run(sweep_end_);
    sweep_run_ = 0;
  }
  return true;
}

// Best fit: the exact size class, else the smallest larger small span, else the smallest large
// span that holds the cell (the rest is split off and listed), and the bump region only when no
// listed gap fits. Small objects thus fill the small gaps between survivors, and the large
// gaps and the bump region stay whole for the objects that need them. Taking the bump region
// first, as this allocator once did, spread every long-lived object born between garbage over
// fresh space, and on the `requests` workload left 1 MiB of 1.5 MiB free in gaps below 9 KiB,
// too small for its response buffers: sweeps freed less each time, then the heap ran out
// (docs/results.md).
Address Heap::ms_allocate(std::uint64_t cell) {
  for (std::uint64_t c = cell / 16; c < kSmallClasses; ++c) {
    if (small_free_[c].empty()) continue;
    const Address a = small_free_[c].back();
    small_free_[c].pop_back();
    if (c * 16 > cell) list_free(a + cell, c * 16 - cell);
    return a;
  }
  auto it = large_free_.lower_bound(cell);
  if (it != large_free_.end()) {
    const std::uint64_t span = it->first;
    const Address a = it->second;
    large_free_.erase(it);
    if (span > cell) list_free(a + cell, span - cell);
    return a;
  }
  if (ms_end_ - ms_bump_ >= cell) {
    const Address a = ms_bump_;
    ms_bump_ += cell;
    return a;
  }
  return 0;
}

Heap::FreeSpace Heap::free_space() const {
  FreeSpace f;
  if (options_.gc == GcPolicy::kSemiSpace) return f;
  f.free_bytes = f.largest_gap = ms_end_ - ms_bump_;
  f.gaps = f.free_bytes != 0;
  for (std::uint64_t c = 1; c < kSmallClasses; ++c) {
    f.free_bytes += c * 16 * small_free_[c].size();
    f.gaps += small_free_[c].size();
    if (!small_free_[c].empty()) f.largest_gap = std::max(f.largest_gap, c * 16);
  }
  for (const auto& [bytes, a] : large_free_) f.free_bytes += bytes;
  f.gaps += large_free_.size();
  if (!large_free_.empty()) f.largest_gap = std::max(f.largest_gap, large_free_.rbegin()->first);
  return f;
}

}  // namespace objprof::sim
