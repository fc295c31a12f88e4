// How the sim's collectors report deaths: adjacent dead objects (with the free cells between
// them) as one Profiler::on_free_range, a lone dead object as one on_free, or every dead object
// as an on_free of its own. A sweep's cost to the profiler then follows the runs of dead cells,
// not the objects in them. The mode is a template parameter (with_report_mode), so that a
// collector loop that reports nothing (no profiler) or each object carries no test of the
// others per object.
#pragma once

#include "report_mode.h"

#include <objprof/profiler.h>

#include <cstdint>

namespace objprof::sim {

enum class DeathReports { kNone, kEach, kRuns };

// The mode of a heap with `profiler` (null: none) and HeapOptions::free_ranges.
inline DeathReports death_reports(const Profiler* profiler, bool ranges) {
  if (profiler == nullptr) return DeathReports::kNone;
  return ranges ? DeathReports::kRuns : DeathReports::kEach;
}

template <DeathReports kMode>
class FreeRuns {
 public:
  // The profiler may be null only with kNone.
  explicit FreeRuns(Profiler* profiler) : profiler_(profiler) {}
  FreeRuns(const FreeRuns&) = delete;
  FreeRuns& operator=(const FreeRuns&) = delete;

  // A dead object at `a`: reported now (kEach), or it starts a run or joins the one in
  // progress (kRuns). Free cells need no call: a run covers everything up to where it is
  // flushed.
  void dead(Address a) {
    if constexpr (kMode == DeathReports::kEach) {
      profiler_->on_free(a);
    } else if constexpr (kMode == DeathReports::kRuns) {
      if (count_++ == 0) begin_ = a;
    }
  }
  // A live object at `at`, or the walk stops at `at` (the end of a step or of the space): the
  // run so far, [first dead object, at), holds no live object and is reported, free cells and
  // all, as one on_free_range (one on_free for a lone dead object). The walk does no more per
  // cell than count: the range's end is where the walk already is.
  void flush(Address at) {
    if constexpr (kMode == DeathReports::kRuns) {
      if (count_ == 0) return;
      if (count_ == 1) profiler_->on_free(begin_);
      else profiler_->on_free_range(begin_, at - begin_);
      count_ = 0;
    }
  }

 private:
  Profiler* profiler_;
  Address begin_ = 0;
  std::uint64_t count_ = 0;
};

}  // namespace objprof::sim
