// How the sim's collectors report deaths: adjacent dead objects (with the free cells between
// them) as one Profiler::on_free_range, a lone dead object as one on_free. A sweep's cost to
// the profiler then follows the runs of dead cells, not the objects in them.
#pragma once

#include <objprof/profiler.h>

#include <cstdint>

namespace objprof::sim {

class FreeRuns {
 public:
  // Null profiler: reports nothing. ranges false: one on_free per dead object.
  FreeRuns(Profiler* profiler, bool ranges) : profiler_(profiler), ranges_(ranges) {}
  FreeRuns(const FreeRuns&) = delete;
  FreeRuns& operator=(const FreeRuns&) = delete;

  // A dead object at `a`: it starts a run, or joins the one in progress. Free cells need no
  // call: a run covers everything up to where it is flushed.
  void dead(Address a) {
    if (!profiler_) return;
    if (!ranges_) {
      profiler_->on_free(a);
      return;
    }
    if (count_++ == 0) begin_ = a;
  }
  // A live object at `at`, or the walk stops at `at` (the end of a step or of the space): the
  // run so far, [first dead object, at), holds no live object and is reported, free cells and
  // all, as one on_free_range (one on_free for a lone dead object). The walk does no more per
  // cell than count: the range's end is where the walk already is.
  void flush(Address at) {
    if (count_ == 1) profiler_->on_free(begin_);
    else if (count_ > 1) profiler_->on_free_range(begin_, at - begin_);
    count_ = 0;
  }

 private:
  Profiler* profiler_;
  bool ranges_;
  Address begin_ = 0;
  std::uint64_t count_ = 0;
};

}  // namespace objprof::sim
