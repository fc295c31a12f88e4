// Cohorts (thesis 004, ch. 3 and 5): the run is cut into fixed windows of allocated bytes;
// every object belongs to the cohort that was filling when it was born (the oldest cohort it
// spans). Over time (the Timeline's samples) each cohort shows its live objects, live bytes
// and the average lifetime of its objects that have died so far — the "heap composition in
// lines of constant allocation" plots.
#pragma once

#include "objprof/analysis/object_metrics.h"
#include "objprof/analysis/timeline.h"
#include "objprof/analysis/trace_analysis.h"

#include <cstdint>
#include <vector>

namespace objprof::analysis {

struct CohortOptions {
  std::uint64_t cohort_bytes = 0;  // 0: automatic (a power of two giving about 32 cohorts)
  std::size_t max_cohorts = 64;    // a larger count doubles the cohort size until it fits
};

struct Cohort {
  std::uint32_t index = 0;
  std::uint64_t start_bytes = 0;  // clock at which it began filling
  std::uint64_t allocated_objects = 0, allocated_bytes = 0;
  std::uint64_t dead_objects = 0;
  double mean_lifetime_bytes = 0;  // over its dead objects
  // Per Timeline sample:
  std::vector<std::uint64_t> live_objects, live_bytes;
  std::vector<double> mean_lifetime_bytes_so_far;  // of its objects dead by that sample
};

struct CohortView {
  std::uint64_t cohort_bytes = 0;
  Timeline timeline;
  std::vector<Cohort> cohorts;  // every cohort with an object, oldest first
};

// The cohort size options give for this trace.
std::uint64_t cohort_bytes_for(const TraceAnalysis& a, const CohortOptions& options);

class CohortBuilder {
 public:
  // `timeline` must outlive the builder.
  CohortBuilder(const TraceAnalysis& a, const Timeline& timeline, std::uint64_t cohort_bytes);
  void add(ObjectId o, const ObjectMetrics& m);
  void merge(const CohortBuilder& other);
  CohortView finish() const;

 private:
  const TraceAnalysis* a_;
  const Timeline* t_;
  std::uint64_t cohort_bytes_;
  std::size_t cohorts_, samples_;
  std::vector<std::uint64_t> alloc_objects_, alloc_bytes_, dead_, lifetime_sum_;  // per cohort
  // cohorts x (samples + 1) difference arrays
  std::vector<std::uint64_t> live_objects_, live_bytes_;
  std::vector<std::uint64_t> deaths_at_, lifetime_at_;
};

CohortView cohort_view(const TraceAnalysis& a, const CohortOptions& options = {}, const ObjectFilter& filter = {},
                       std::size_t max_samples = 200);

}  // namespace objprof::analysis
