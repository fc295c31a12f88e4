// Survival rate per allocation site: the share of a site's objects that survived 1, 2, 4, 8 ...
// GCs, and a pretenuring hint for sites whose objects nearly all survive (allocating them
// directly in the old generation saves copying them, as in Blackburn et al.'s pretenuring).
//
// An object counts for threshold n if it survived n GCs, or died before n; an object alive at
// the end that has not yet been through n GCs tells nothing about n and is left out of it.
#pragma once

#include "objprof/analysis/object_metrics.h"
#include "objprof/analysis/trace_analysis.h"

#include <cstdint>
#include <vector>

namespace objprof::analysis {

struct SurvivalOptions {
  double pretenure_rate = 0.9;        // hint when at least this share survives `pretenure_gcs`
  std::uint32_t pretenure_gcs = 2;
  std::uint64_t pretenure_min_objects = 16;  // ...out of at least this many objects
};

struct SurvivalRow {
  std::uint32_t site = 0;  // index into TraceAnalysis::sites
  std::uint64_t objects = 0, bytes = 0;
  std::vector<std::uint64_t> survived, eligible;  // per threshold
  bool pretenure = false;
  double rate(std::size_t k) const noexcept {
    return eligible[k] ? static_cast<double>(survived[k]) / static_cast<double>(eligible[k]) : 0.0;
  }
};

struct SurvivalTable {
  SurvivalOptions options;
  std::vector<std::uint32_t> thresholds;  // 1, 2, 4, ... GCs (up to the trace's GC count)
  std::vector<SurvivalRow> rows;           // by allocated bytes, largest first; at most `top`
};

class SurvivalBuilder {
 public:
  SurvivalBuilder(const TraceAnalysis& a, const SurvivalOptions& options);
  void add(ObjectId o, const ObjectMetrics& m);
  void merge(const SurvivalBuilder& other);
  SurvivalTable finish(std::size_t top) const;

 private:
  const TraceAnalysis* a_;
  SurvivalOptions opt_;
  std::vector<std::uint32_t> thresholds_;
  std::vector<std::uint64_t> objects_, bytes_;
  // sites x (thresholds + 1): objects by how many thresholds they reached, dead and alive.
  std::vector<std::uint64_t> dead_, alive_;
};

SurvivalTable survival_table(const TraceAnalysis& a, const SurvivalOptions& options = {}, std::size_t top = SIZE_MAX);

}  // namespace objprof::analysis
