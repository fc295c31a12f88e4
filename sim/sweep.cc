// The mark-sweep space's sweep, shared by the stop-the-world collector (one call covers the
// whole space) and the lazy one (a bounded step per allocation, docs/sim.md):
// - Dead objects become free cells (type 0, their cell size in word 1) as they are reported
//   with on_free, so the space stays walkable at every step.
// - Runs of free cells are coalesced and put on the size-segregated free lists only when the
//   run closes. A run still open at the end of a step stays open into the next step (so runs
//   coalesce across steps), unless an allocation needs it now (list_open_run): a long dead
//   stretch would otherwise keep its memory from the mutators until the sweep leaves it. The
//   lists only ever hold memory below the cursor, which is what keeps a lazy sweep from meeting
//   an object allocated during it.
// - A run that ends where the sweep ends goes back to the bump region, unless the mutators
//   bump-allocated past that point during a lazy sweep; then it is an ordinary free span.
#include "heap.h"

namespace objprof::sim {

void Heap::start_sweep() {
  // Every free cell is below ms_bump_ and will be swept (and relisted) again.
  for (auto& l : small_free_) l.clear();
  large_free_.clear();
  sweep_cursor_ = ms_begin_;
  sweep_end_ = ms_bump_;
  sweep_run_ = 0;
}

void Heap::close_run(Address end) {
  if (sweep_run_ == 0) return;
  const std::uint64_t bytes = end - sweep_run_;
  header(sweep_run_) = ObjHeader{kFreeCellType, 0, bytes};
  if (bytes / 16 < kSmallClasses) small_free_[bytes / 16].push_back(sweep_run_);
  else large_free_.emplace(bytes, sweep_run_);
  sweep_run_ = 0;
}

bool Heap::list_open_run(std::uint64_t cell) {
  if (sweep_run_ == 0 || sweep_cursor_ - sweep_run_ < cell) return false;
  close_run(sweep_cursor_);  // every cell in [run, cursor) is swept and free
  return true;
}

bool Heap::sweep_cells(std::uint64_t budget) {
  const Address stop = budget >= sweep_end_ - sweep_cursor_ ? sweep_end_ : sweep_cursor_ + budget;
  Address a = sweep_cursor_;
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
        close_run(a);
        gc_.live_bytes_after += cell;
      } else {
        if (profiler_) profiler_->on_free(a);
        ++gc_.freed_objects;
        gc_.freed_bytes += size;
        h.type = kFreeCellType;
        h.word = cell;
        if (sweep_run_ == 0) sweep_run_ = a;
      }
    }
    a += cell;
  }
  sweep_cursor_ = a;  // may pass `stop` by the rest of the last cell
  if (sweep_cursor_ < sweep_end_) return false;
  if (sweep_run_ != 0) {
    if (ms_bump_ == sweep_end_) ms_bump_ = sweep_run_;  // the trailing free run: bump space again
    else close_run(sweep_end_);
    sweep_run_ = 0;
  }
  return true;
}

}  // namespace objprof::sim
