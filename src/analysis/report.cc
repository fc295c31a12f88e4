// build_report: all per-object views in one parallel pass (each worker owns one builder of
// every view; they are merged at the end), so a 10-million-object trace is walked once.
#include "objprof/analysis/report.h"

#include "parallel.h"

#include <tbb/combinable.h>

#include <optional>

namespace objprof::analysis {

namespace {

struct Views {
  GroupTableBuilder sites, types, threads;
  LeakReportBuilder leaks;
  SurvivalBuilder survival;
  CohortBuilder cohorts;
  SizeDemographicsBuilder sizes;
  LiveSeriesBuilder thread_volume;
  std::optional<HeapDiffBuilder> diff;
  const LifetimeBuckets& buckets;
  std::uint64_t objects = 0, bytes = 0;

  Views(const TraceAnalysis& a, const ReportOptions& o, const Timeline& t, std::uint64_t cohort_bytes)
      : sites(a, GroupBy::kSite, o.buckets),
        types(a, GroupBy::kType, o.buckets),
        threads(a, GroupBy::kThread, o.buckets),
        leaks(a, o.leaks),
        survival(a, o.survival),
        cohorts(a, t, cohort_bytes),
        sizes(a),
        thread_volume(a, t, GroupBy::kThread),
        buckets(o.buckets) {
    if (o.diff) diff.emplace(a, o.diff->first, o.diff->second);
  }

  void add(const TraceAnalysis& a, const ObjectFilter& f, ObjectId o) {
    const ObjectMetrics m = object_metrics(a, o);
    survival.add(o, m);  // survival needs the young objects: it is what they are about
    if (!f.keep(m)) return;
    ++objects;
    bytes += m.size;
    const std::size_t bucket = m.alive ? 0 : buckets.index(buckets.clock == Clock::kGcs ? m.lifetime_gcs : m.lifetime_bytes);
    sites.add(o, m, bucket);
    types.add(o, m, bucket);
    threads.add(o, m, bucket);
    leaks.add(o, m);
    cohorts.add(o, m);
    sizes.add(o, m);
    thread_volume.add(o, m);
    if (diff) diff->add(o, m);
  }

  void merge(const Views& v) {
    objects += v.objects;
    bytes += v.bytes;
    sites.merge(v.sites);
    types.merge(v.types);
    threads.merge(v.threads);
    leaks.merge(v.leaks);
    survival.merge(v.survival);
    cohorts.merge(v.cohorts);
    sizes.merge(v.sizes);
    thread_volume.merge(v.thread_volume);
    if (diff) diff->merge(*v.diff);
  }
};

}  // namespace

Result<Report> build_report(const TraceAnalysis& a, const ReportOptions& options) {
  if (options.diff) {
    const auto [from, to] = *options.diff;
    if (from > to || to > a.end_epoch) {
      auto d = heap_diff(a, from, to);  // produces the error message
      if (!d.ok()) return d.error();
    }
  }
  Report r;
  r.analysis = &a;
  r.options = options;
  const Timeline timeline = make_timeline(a, options.max_samples);
  const std::uint64_t cohort_bytes = cohort_bytes_for(a, options.cohorts);
  auto make = [&] { return Views(a, options, timeline, cohort_bytes); };
  tbb::combinable<std::optional<Views>> parts;
  internal::parallel_range(a.objects.size(), 1 << 15, [&](const tbb::blocked_range<std::size_t>& range) {
    std::optional<Views>& v = parts.local();
    if (!v) v.emplace(make());
    for (std::size_t i = range.begin(); i != range.end(); ++i) v->add(a, options.filter, static_cast<ObjectId>(i));
  });
  Views all = make();
  parts.combine_each([&](const std::optional<Views>& v) {
    if (v) all.merge(*v);
  });
  r.objects_considered = all.objects;
  r.bytes_considered = all.bytes;
  r.leaks = all.leaks.finish(options.top);
  r.sites = all.sites.finish(options.top);
  r.types = all.types.finish(options.top);
  r.threads = all.threads.finish(options.top);
  r.survival = all.survival.finish(options.top);
  r.cohorts = all.cohorts.finish();
  r.sizes = all.sizes.finish();
  r.thread_volume = all.thread_volume.finish(SIZE_MAX);
  if (all.diff) r.diff = all.diff->finish(options.top);
  if (options.replay && a.objects.size() > 0) {
    auto rep = heap_replay(a, options.replay_options);
    if (!rep.ok()) return rep.error();
    r.replay = std::move(*rep);
  }
  return r;
}

}  // namespace objprof::analysis
