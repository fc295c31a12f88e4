// How the sim's moving collectors report moves as runs (HeapOptions::move_ranges): objects
// that lay next to each other and land next to each other (a semispace's neighbours copied one
// after the other, a compaction's neighbouring survivors slid by the same distance) go to the
// profiler as one on_move_range, a lone move as one on_move. The profiler then pays per run of
// moved objects, not per object: it cards a range's tracked objects from its start bits, and
// an untracked object inside a range costs it nothing (docs/embedding.md).
#pragma once

#include "report_mode.h"

#include <objprof/profiler.h>

#include <cstdint>

namespace objprof::sim {

enum class MoveReports { kNone, kEach, kRuns };

// The mode of a heap with `profiler` (null: none) and HeapOptions::move_ranges.
inline MoveReports move_reports(const Profiler* profiler, bool ranges) {
  if (profiler == nullptr) return MoveReports::kNone;
  return ranges ? MoveReports::kRuns : MoveReports::kEach;
}

// [from, from + bytes) moved to [to, to + bytes): a run of adjacent objects whose first is
// `first_bytes` long (all of it: one object, reported as such).
inline void report_move_run(Profiler& profiler, Address from, Address to, std::uint64_t bytes,
                            std::uint64_t first_bytes) {
  if (bytes == first_bytes) profiler.on_move(from, to);
  else profiler.on_move_range(from, to, bytes);
}

}  // namespace objprof::sim
