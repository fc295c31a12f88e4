// The report: every view of a TraceAnalysis, computed in one parallel pass over the objects,
// ready for the text, JSON, CSV and HTML writers.
#pragma once

#include "objprof/analysis/cohorts.h"
#include "objprof/analysis/group_table.h"
#include "objprof/analysis/heap_diff.h"
#include "objprof/analysis/heap_replay.h"
#include "objprof/analysis/leak_report.h"
#include "objprof/analysis/lifetime_buckets.h"
#include "objprof/analysis/live_series.h"
#include "objprof/analysis/object_metrics.h"
#include "objprof/analysis/size_demographics.h"
#include "objprof/analysis/survival.h"
#include "objprof/analysis/trace_analysis.h"
#include "objprof/result.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace objprof::analysis {

struct ReportOptions {
  std::string trace_name;     // shown in the report
  std::size_t top = 20;       // rows per table
  ObjectFilter filter;        // --min-age (every per-object view except survival)
  LeakOptions leaks;
  LifetimeBuckets buckets;
  SurvivalOptions survival;
  CohortOptions cohorts;
  std::size_t max_samples = 200;  // points of the over-time views
  std::optional<std::pair<std::uint32_t, std::uint32_t>> diff;  // --diff=A:B
  bool replay = false;            // compute the heap replay picture (the HTML report does)
  ReplayOptions replay_options;
};

struct Report {
  const TraceAnalysis* analysis = nullptr;
  ReportOptions options;
  std::uint64_t objects_considered = 0, bytes_considered = 0;  // after the filter
  LeakReport leaks;
  GroupTable sites, types, threads;
  SurvivalTable survival;
  CohortView cohorts;
  SizeDemographics sizes;
  LiveSeriesView thread_volume;
  std::optional<HeapDiff> diff;
  std::optional<HeapReplay> replay;
};

// Errors: a diff outside the trace's epochs, a bad replay window (kInvalidArgument).
Result<Report> build_report(const TraceAnalysis& a, const ReportOptions& options);

}  // namespace objprof::analysis
