// The trace targets' common body: a trace that reads and analyzes is put through every view
// and every output format the analysis offers, all rendered to memory.
#pragma once

#include "fuzz_check.h"

#include <objprof/analysis/analyzer.h>
#include <objprof/analysis/cohorts.h>
#include <objprof/analysis/group_table.h>
#include <objprof/analysis/heap_diff.h>
#include <objprof/analysis/heap_replay.h>
#include <objprof/analysis/leak_report.h>
#include <objprof/analysis/live_series.h>
#include <objprof/analysis/perfetto_export.h>
#include <objprof/analysis/report.h>
#include <objprof/analysis/report_csv.h>
#include <objprof/analysis/report_html.h>
#include <objprof/analysis/report_json.h>
#include <objprof/analysis/report_text.h>
#include <objprof/analysis/size_demographics.h>
#include <objprof/analysis/survival.h>
#include <objprof/trace_reader.h>

#include <tbb/global_control.h>

#include <cstdio>
#include <cstdlib>
#include <span>

namespace objprof::fuzz {

// One worker thread: runs are reproducible, and the fuzz job stays on one core.
inline void single_threaded() {
  static tbb::global_control one(tbb::global_control::max_allowed_parallelism, 1);
}

// Every view of an analysis, rendered to strings (and the objects CSV to a memory stream).
inline void all_views(const analysis::TraceAnalysis& a) {
  using namespace analysis;
  ReportOptions o;
  o.trace_name = "fuzz";
  o.top = 5;
  o.max_samples = 40;
  o.replay = true;
  o.replay_options.max_segments = 500;
  if (a.end_epoch > 0) o.diff = std::pair<std::uint32_t, std::uint32_t>{0, a.end_epoch};
  auto report = build_report(a, o);
  if (!report.ok()) {
    o.diff.reset();  // a diff or replay window the trace cannot give is an error, not a bug
    report = build_report(a, o);
    if (!report.ok()) {
      o.replay = false;
      report = build_report(a, o);
    }
  }
  OBJPROF_FUZZ_CHECK(report.ok());
  (void)render_text(*report);
  (void)render_json(*report);
  (void)render_html(*report);
  for (CsvTable t : {CsvTable::kLeaks, CsvTable::kSites, CsvTable::kTypes, CsvTable::kThreads, CsvTable::kSurvival,
                     CsvTable::kCohorts, CsvTable::kSizes, CsvTable::kGcs, CsvTable::kDiff}) {
    auto csv = render_csv(*report, t);
    OBJPROF_FUZZ_CHECK(csv.ok() || t == CsvTable::kDiff);
  }
  char* buf = nullptr;
  std::size_t len = 0;
  if (std::FILE* mem = open_memstream(&buf, &len)) {
    OBJPROF_FUZZ_CHECK(write_objects_csv(a, ObjectFilter{1}, mem).ok());
    std::fclose(mem);
  }
  std::free(buf);
  (void)render_perfetto(a, PerfettoOptions{"fuzz", 4, 40});
  ReplayOptions ro;
  ro.max_segments = 200;
  if (a.objects.size() > 0) ro.follow = static_cast<ObjectId>(a.objects.size() - 1);
  if (auto replay = heap_replay(a, ro); replay.ok()) (void)replay_svg(a, *replay);
  for (GroupBy by : {GroupBy::kSite, GroupBy::kType, GroupBy::kThread}) {
    (void)live_series(a, by, ObjectFilter{1}, 16, 4);
    (void)group_table(a, by, LifetimeBuckets{}, ObjectFilter{}, 4);
  }
  CohortOptions co;
  co.cohort_bytes = 64;  // the smallest cohorts: many of them
  (void)cohort_view(a, co, ObjectFilter{}, 16);
  (void)survival_table(a, SurvivalOptions{}, 4);
  (void)size_demographics(a, ObjectFilter{}, 4);
  (void)leak_report(a, LeakOptions{}, ObjectFilter{}, 4);
  if (a.end_epoch > 0) (void)heap_diff(a, a.end_epoch / 2, a.end_epoch);
}

// The reader's own Contents form of the trace, which the dump command and tests use.
inline void load_contents(std::span<const std::byte> bytes) {
  auto c = trace::load(bytes);
  if (!c.ok()) return;
  for (std::uint64_t e = 0; e < 3 && e <= c->gc_begins.size(); ++e) (void)c->marked_addresses(e);
}

}  // namespace objprof::fuzz
