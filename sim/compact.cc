// Sliding compaction of the mark-sweep space: the fallback a fragmented non-moving heap needs
// (CMS's compacting full GC). It runs after a stop-the-world mark, with the world still
// stopped, in three passes over the marked space (Lisp-2 order, with the forwarding addresses
// in a side table because an object's header words are all in use):
// 1. plan: walk the space in address order; each live object's destination is the next free
//    address below it, runs of dead ones are reported with on_free_range (FreeRuns);
// 2. forward: every reference (roots, live objects of this space and of the large-object
//    space) is rewritten to its target's destination, found by binary search in the plan;
// 3. move: objects slide down in address order (a destination never lies above its source, so
//    memmove in that order never overwrites an object still to move), each reported with
//    on_move(old, new) at its pre-GC address, as the hook protocol asks; the profiler applies
//    a sliding collector's moves after all its lookups (one object's `to` may be another's
//    `from`).
// What is left above the last live object is one bump region; the free lists are empty.
#include "heap.h"
#include "free_runs.h"
#include "move_runs.h"

#include <algorithm>
#include <cstring>

namespace objprof::sim {

void Heap::compact_marksweep(GcInfo& info) {
  compact_from_.clear();
  compact_to_.clear();
  Address free = ms_begin_;
  with_report_mode(death_reports(events_, options_.free_ranges), [&](auto mode) {
    FreeRuns<decltype(mode)::value> deaths(events_);
    for (Address a = ms_begin_; a < ms_bump_;) {
      const ObjHeader& h = header(a);
      if (h.type == kFreeCellType) {
        a += h.word;
        continue;
      }
      const std::uint64_t size = object_size(a);
      const std::uint64_t cell = cell_size(size);
      if (is_marked(a)) {
        deaths.flush(a);
        compact_from_.push_back(a);
        compact_to_.push_back(free);
        free += cell;
      } else {
        deaths.dead(a);
        ++info.freed_objects;
        info.freed_bytes += size;
      }
      a += cell;
    }
    deaths.flush(ms_bump_);
  });
  auto forward = [&](std::uint64_t& slot) {
    if (slot < ms_begin_ || slot >= ms_bump_) return;  // null or a large object: never moves
    const auto it = std::lower_bound(compact_from_.begin(), compact_from_.end(), slot);
    slot = compact_to_[static_cast<std::size_t>(it - compact_from_.begin())];
  };
  visit_all_roots(forward);
  for (Address a : compact_from_) for_each_ref_slot(a, forward);
  for (Address a : los_objects_)
    if (is_marked(a)) for_each_ref_slot(a, forward);
  // Slid in address order. With move ranges, neighbours that slide by the same distance (no
  // dead object between them) are reported as one run.
  const bool runs = options_.move_ranges;
  for (std::size_t i = 0; i < compact_from_.size();) {
    const Address from = compact_from_[i], to = compact_to_[i];
    const std::uint64_t first = cell_size(object_size(from));  // the run's first object, for a run of one
    std::uint64_t bytes = 0, objects = 0;
    do {
      const std::uint64_t size = object_size(compact_from_[i]);
      if (from != to)
        std::memmove(reinterpret_cast<void*>(to + bytes), reinterpret_cast<const void*>(from + bytes), size);
      const std::uint64_t cell = cell_size(size);
      bytes += cell;
      ++objects;
      ++i;
    } while (runs && i < compact_from_.size() && compact_from_[i] == from + bytes && compact_to_[i] == to + bytes);
    if (from == to) continue;  // objects before the first dead one stay where they are
    if (events_) report_move_run(*events_, from, to, bytes, first);
    info.moved_objects += objects;
  }
  for (auto& l : small_free_) l.clear();
  large_free_.clear();
  info.live_bytes_after += free - ms_begin_;
  ms_bump_ = free;
}

}  // namespace objprof::sim
