// Timeline: the sample points of the "over time" views (cohorts, heap volume per thread).
//
// A sample is taken after each GC (the live heap right after GC e, epoch e's objects that
// survived it included) and one at the end of the trace. An object born in epoch b is in the
// samples of epochs b .. d-1 if the GC of epoch d freed it, and b .. end if it is alive. The
// x coordinate of a sample is the bytes-allocated clock (the thesis' time axis). Long traces
// are thinned to at most `max_samples` evenly spaced GCs (the end is always kept).
#pragma once

#include "objprof/analysis/trace_analysis.h"

#include <cstdint>
#include <vector>

namespace objprof::analysis {

struct Timeline {
  std::vector<std::uint32_t> epochs;  // sampled epochs, increasing; the last is end_epoch ("end")
  std::vector<std::uint64_t> clocks;  // bytes allocated at each sample
  // sample_from[e]: index of the first sample at or after epoch e (e in 0 .. end_epoch + 1).
  std::vector<std::uint32_t> sample_from;

  std::size_t size() const noexcept { return epochs.size(); }
  // The samples [first, last) in which an object alive during epochs [birth, stop) appears.
  std::uint32_t first_sample(std::uint32_t epoch) const noexcept {
    return sample_from[epoch < sample_from.size() ? epoch : sample_from.size() - 1];
  }
};

Timeline make_timeline(const TraceAnalysis& a, std::size_t max_samples = 200);

}  // namespace objprof::analysis
