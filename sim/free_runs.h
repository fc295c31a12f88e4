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
  ~FreeRuns() { flush(); }

  // A dead object whose cell is [a, a + cell).
  void dead(Address a, std::uint64_t cell) {
    if (!profiler_) return;
    if (!ranges_) {
      profiler_->on_free(a);
      return;
    }
    if (count_ == 0) begin_ = a;
    ++count_;
    end_ = a + cell;
  }
  // Memory that holds no object (a free cell): it joins a run in progress.
  void gap(Address a, std::uint64_t cell) {
    if (count_ != 0) end_ = a + cell;
  }
  // A live object or the end of a step: the run so far is reported.
  void flush() {
    if (count_ == 1) profiler_->on_free(begin_);
    else if (count_ > 1) profiler_->on_free_range(begin_, end_ - begin_);
    count_ = 0;
  }

 private:
  Profiler* profiler_;
  bool ranges_;
  Address begin_ = 0, end_ = 0;
  std::uint64_t count_ = 0;
};

}  // namespace objprof::sim
