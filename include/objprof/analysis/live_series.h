// Live objects and bytes over time per thread, site or type. Per thread it is the thesis'
// "heap volume by thread" (004, 3.3.1 and 5.2.3): a thread that has ended keeps its line as
// long as objects it allocated are alive. Per site it feeds the Perfetto counters.
#pragma once

#include "objprof/analysis/group_table.h"
#include "objprof/analysis/object_metrics.h"
#include "objprof/analysis/timeline.h"
#include "objprof/analysis/trace_analysis.h"

#include <cstdint>
#include <vector>

namespace objprof::analysis {

struct LiveSeries {
  std::uint32_t group = 0;  // index into TraceAnalysis::threads / sites / types
  std::uint64_t allocated_objects = 0, allocated_bytes = 0;
  std::vector<std::uint64_t> live_objects, live_bytes;  // per Timeline sample
};

struct LiveSeriesView {
  GroupBy by = GroupBy::kThread;
  Timeline timeline;
  std::vector<LiveSeries> series;  // groups with objects; threads in order of appearance,
                                   // sites and types by allocated bytes, largest first
};

class LiveSeriesBuilder {
 public:
  LiveSeriesBuilder(const TraceAnalysis& a, const Timeline& timeline, GroupBy by);
  void add(ObjectId o, const ObjectMetrics& m);
  void merge(const LiveSeriesBuilder& other);
  LiveSeriesView finish(std::size_t top) const;

 private:
  const TraceAnalysis* a_;
  const Timeline* t_;
  GroupBy by_;
  std::size_t samples_;
  std::vector<std::uint64_t> objects_, bytes_;
  std::vector<std::uint64_t> live_objects_, live_bytes_;  // groups x (samples + 1) differences
};

LiveSeriesView live_series(const TraceAnalysis& a, GroupBy by, const ObjectFilter& filter = {},
                           std::size_t max_samples = 200, std::size_t top = SIZE_MAX);

}  // namespace objprof::analysis
