// The leak report, LeakTracer style: objects still alive at the end that are stale by the
// online profiler's rule (staleness.h: idle for `stale_after` GC epochs, a full GC since, and
// their thread's progress), grouped by allocation site and ranked by stale byte-epochs (sum of size x idle epochs: big and long-forgotten first), with counts, bytes and
// the chain of each site's most stale object (the one to look at first).
#pragma once

#include "objprof/analysis/chain_store.h"
#include "objprof/analysis/object_metrics.h"
#include "objprof/analysis/staleness.h"
#include "objprof/analysis/trace_analysis.h"

#include <cstdint>
#include <vector>

namespace objprof::analysis {

struct LeakOptions {
  std::uint32_t stale_after = 4;  // GC_K: idle epochs before an object counts as stale
  std::uint64_t min_size = 0;     // smaller objects are left out
  // And its owner thread's bytes allocated since (StaleRule::kAutoBytes: its busiest epoch;
  // 0: GC_K alone).
  std::uint64_t stale_after_bytes = StaleRule::kAutoBytes;
  StaleRule rule() const noexcept { return {stale_after, stale_after_bytes}; }
};

struct LeakSite {
  std::uint32_t site = 0;  // index into TraceAnalysis::sites
  std::uint64_t objects = 0, bytes = 0;
  std::uint64_t score = 0;             // sum of size x idle epochs
  std::uint32_t max_idle_epochs = 0;
  std::uint64_t reported_online = 0;   // of them, reported by the profiler's online tracker
  ObjectId oldest = 0;                 // the most stale object (ties: larger, then older)
  Chain oldest_chain;
  ObjectMetrics oldest_metrics;
  // The online tracker's path from a GC root to a stale object of this site, an index into
  // TraceAnalysis::paths, or kNoIndex: a path found (for the oldest object's type if there is
  // one), else the last search that found none.
  std::uint32_t path = kNoIndex;
};

struct LeakReport {
  LeakOptions options;
  std::vector<LeakSite> sites;  // ranked; at most `top`
  std::uint64_t objects = 0, bytes = 0;  // every stale object, before the cut
};

class LeakReportBuilder {
 public:
  LeakReportBuilder(const TraceAnalysis& a, const LeakOptions& options);
  void add(ObjectId o, const ObjectMetrics& m);
  void merge(const LeakReportBuilder& other);
  LeakReport finish(std::size_t top) const;

 private:
  struct Acc {
    std::uint64_t objects = 0, bytes = 0, score = 0, online = 0;
    std::uint32_t max_idle = 0;
    std::uint64_t oldest_size = 0;
    ObjectId oldest = kNoIndex;
  };
  const TraceAnalysis* a_;
  LeakOptions opt_;
  std::vector<Acc> acc_;
};

// The path record shown for a leak site (LeakSite::path).
std::uint32_t leak_site_path(const TraceAnalysis& a, std::uint32_t site, std::uint32_t type);

LeakReport leak_report(const TraceAnalysis& a, const LeakOptions& options, const ObjectFilter& filter = {},
                       std::size_t top = SIZE_MAX);

}  // namespace objprof::analysis
