#include "objprof/analysis/report_json.h"

#include "chain_format.h"
#include "json_writer.h"
#include "path_format.h"

#include <fmt/core.h>

namespace objprof::analysis {

namespace {

using internal::JsonWriter;

void group_rows(JsonWriter& j, const GroupTable& g) {
  auto row = [&](const GroupRow& r) {
    j.begin_object();
    j.field("id", r.id);
    j.field("name", r.name);
    j.field("allocated_objects", r.allocated_objects);
    j.field("allocated_bytes", r.allocated_bytes);
    j.field("live_objects", r.live_objects);
    j.field("live_bytes", r.live_bytes);
    j.field("dead_objects", r.dead_objects);
    j.field("mean_lifetime_gcs", r.mean_lifetime_gcs);
    j.field("mean_lifetime_bytes", r.mean_lifetime_bytes);
    j.array("lifetime_buckets", r.lifetime_buckets);
    j.end_object();
  };
  j.begin_object();
  j.field("groups", static_cast<std::uint64_t>(g.groups));
  j.key("rows").begin_array();
  for (const GroupRow& r : g.rows) row(r);
  j.end_array();
  j.key("total");
  row(g.total);
  j.end_object();
}

void series_u64(JsonWriter& j, const char* key, const std::vector<std::uint64_t>& v) { j.array(key, v); }

}  // namespace

std::string render_json(const Report& r) {
  const TraceAnalysis& a = *r.analysis;
  std::string out;
  JsonWriter j(out);
  j.begin_object();
  j.field("schema", kReportSchema);

  j.key("trace").begin_object();
  j.field("name", r.options.trace_name);
  j.field("complete", a.complete);
  j.field("truncated", a.truncated);
  j.array("warnings", a.warnings);
  j.field("chunks", a.stats.chunks);
  j.field("bytes", a.stats.trace_bytes);
  j.field("granule_bytes", a.header.granule_bytes);
  j.key("spaces").begin_array();
  for (const auto& s : a.header.spaces) {
    j.begin_object();
    j.field("id", s.id);
    j.field("name", s.name);
    j.field("begin", fmt::format("{:#x}", s.begin));
    j.field("end", fmt::format("{:#x}", s.end));
    j.end_object();
  }
  j.end_array();
  j.field("end_epoch", a.end_epoch);
  j.field("end_bytes", a.end_bytes);
  j.end_object();

  j.key("totals").begin_object();
  j.field("objects", static_cast<std::uint64_t>(a.objects.size()));
  j.field("bytes", a.total_bytes);
  j.field("live_objects", a.live_objects);
  j.field("live_bytes", a.live_bytes);
  j.field("gcs", static_cast<std::uint64_t>(a.gcs.size()));
  j.field("moves", a.stats.moves);
  j.field("move_ranges", a.stats.move_ranges);
  j.field("frees", a.stats.frees);
  j.field("free_ranges", a.stats.free_ranges);
  j.field("range_freed", a.stats.range_freed);
  j.field("marked_bits", a.stats.marked_bits);
  j.field("resolved_bits", a.stats.resolved_bits);
  j.field("unresolved_bits", a.stats.unresolved_bits);
  j.field("unknown_frees", a.stats.unknown_frees);
  j.field("unknown_moves", a.stats.unknown_moves);
  j.field("inferred_deaths", a.stats.inferred_deaths);
  j.field("allocs_during_gc", a.stats.allocs_during_gc);
  j.field("stale_records", a.stats.stale_records);
  j.field("path_records", a.stats.path_records);
  j.field("objects_considered", r.objects_considered);
  j.field("bytes_considered", r.bytes_considered);
  j.field("analyzer_peak_bytes", a.peak_memory_bytes);
  j.end_object();

  j.key("options").begin_object();
  j.field("top", static_cast<std::uint64_t>(r.options.top));
  j.field("min_age", r.options.filter.min_age_gcs);
  j.field("stale_after", r.options.leaks.stale_after);
  if (r.options.leaks.stale_after_bytes == StaleRule::kAutoBytes) j.field("stale_after_bytes", "auto");
  else j.field("stale_after_bytes", r.options.leaks.stale_after_bytes);
  j.field("min_size", r.options.leaks.min_size);
  j.field("bucket_clock", r.options.buckets.clock == Clock::kGcs ? "gcs" : "bytes");
  j.array("bucket_bounds", r.options.buckets.bounds);
  j.array("bucket_labels", r.options.buckets.labels());
  j.field("cohort_bytes", r.cohorts.cohort_bytes);
  j.end_object();

  j.key("leaks").begin_object();
  j.field("objects", r.leaks.objects);
  j.field("bytes", r.leaks.bytes);
  j.key("sites").begin_array();
  for (std::size_t i = 0; i < r.leaks.sites.size(); ++i) {
    const LeakSite& s = r.leaks.sites[i];
    j.begin_object();
    j.field("rank", static_cast<std::uint64_t>(i + 1));
    j.field("site", site_label(a.sites[s.site]));
    j.field("site_id", a.sites[s.site].id);
    j.field("method", a.sites[s.site].method);
    j.field("bytecode_offset", a.sites[s.site].bytecode_offset);
    j.field("pc", fmt::format("{:#x}", a.sites[s.site].pc));
    j.field("objects", s.objects);
    j.field("bytes", s.bytes);
    j.field("score", s.score);
    j.field("max_idle_epochs", s.max_idle_epochs);
    j.field("reported_online", s.reported_online);
    j.key("oldest");
    internal::chain_json(j, a, s.oldest_chain, s.oldest_metrics);
    j.key("path");
    if (s.path == kNoIndex) j.null();
    else internal::path_json(j, a, a.paths[s.path]);
    j.end_object();
  }
  j.end_array();
  j.end_object();

  j.key("sites");
  group_rows(j, r.sites);
  j.key("types");
  group_rows(j, r.types);
  j.key("threads");
  group_rows(j, r.threads);

  j.key("thread_lifetimes").begin_array();
  for (const Thread& t : a.threads) {
    j.begin_object();
    j.field("id", t.id);
    j.field("name", t.name);
    j.field("attach_epoch", t.attach_epoch);
    j.key("end_epoch");
    if (t.end_epoch == kNoEpoch) j.null();
    else j.value(t.end_epoch);
    j.end_object();
  }
  j.end_array();

  j.key("survival").begin_object();
  j.array("thresholds", r.survival.thresholds);
  j.field("pretenure_rate", r.survival.options.pretenure_rate);
  j.field("pretenure_gcs", r.survival.options.pretenure_gcs);
  j.key("rows").begin_array();
  for (const SurvivalRow& s : r.survival.rows) {
    j.begin_object();
    j.field("site", site_label(a.sites[s.site]));
    j.field("objects", s.objects);
    j.field("bytes", s.bytes);
    j.array("survived", s.survived);
    j.array("eligible", s.eligible);
    j.key("rates").begin_array();
    for (std::size_t k = 0; k < s.eligible.size(); ++k) {
      if (s.eligible[k]) j.value(s.rate(k));
      else j.null();
    }
    j.end_array();
    j.field("pretenure", s.pretenure);
    j.end_object();
  }
  j.end_array();
  j.end_object();

  j.key("timeline").begin_object();
  j.array("epochs", r.cohorts.timeline.epochs);
  j.array("bytes", r.cohorts.timeline.clocks);
  j.end_object();

  j.key("cohorts").begin_object();
  j.field("cohort_bytes", r.cohorts.cohort_bytes);
  j.key("cohorts").begin_array();
  for (const Cohort& c : r.cohorts.cohorts) {
    j.begin_object();
    j.field("index", c.index);
    j.field("start_bytes", c.start_bytes);
    j.field("allocated_objects", c.allocated_objects);
    j.field("allocated_bytes", c.allocated_bytes);
    j.field("dead_objects", c.dead_objects);
    j.field("mean_lifetime_bytes", c.mean_lifetime_bytes);
    series_u64(j, "live_objects", c.live_objects);
    series_u64(j, "live_bytes", c.live_bytes);
    j.array("mean_lifetime_bytes_so_far", c.mean_lifetime_bytes_so_far);
    j.end_object();
  }
  j.end_array();
  j.end_object();

  j.key("sizes").begin_object();
  j.field("exact", r.sizes.exact);
  j.key("bins").begin_array();
  for (const SizeBin& b : r.sizes.bins) {
    j.begin_object();
    j.field("min", b.min);
    j.field("max", b.max);
    j.field("allocated_objects", b.allocated_objects);
    j.field("allocated_bytes", b.allocated_bytes);
    j.field("live_objects", b.live_objects);
    j.field("live_bytes", b.live_bytes);
    j.end_object();
  }
  j.end_array();
  j.end_object();

  j.key("thread_volume").begin_array();
  for (const LiveSeries& s : r.thread_volume.series) {
    j.begin_object();
    j.field("thread", a.threads[s.group].id);
    j.field("name", a.threads[s.group].name);
    j.field("allocated_objects", s.allocated_objects);
    j.field("allocated_bytes", s.allocated_bytes);
    series_u64(j, "live_objects", s.live_objects);
    series_u64(j, "live_bytes", s.live_bytes);
    j.end_object();
  }
  j.end_array();

  j.key("gcs").begin_array();
  for (const GcRecord& g : a.gcs) {
    j.begin_object();
    internal::gc_fields_json(j, g);
    j.end_object();
  }
  j.end_array();

  j.key("diff");
  if (!r.diff) {
    j.null();
  } else {
    const HeapDiff& d = *r.diff;
    auto counts = [&](const char* k, const DiffCounts& c) {
      j.key(k).begin_object();
      j.field("objects", c.objects);
      j.field("bytes", c.bytes);
      j.end_object();
    };
    j.begin_object();
    j.field("from", d.from);
    j.field("to", d.to);
    counts("kept", d.kept);
    counts("died", d.died);
    counts("born", d.born);
    j.key("rows").begin_array();
    for (const HeapDiffRow& row : d.rows) {
      j.begin_object();
      j.field("site", site_label(a.sites[row.site]));
      counts("kept", row.kept);
      counts("died", row.died);
      counts("born", row.born);
      j.field("net_bytes", row.net_bytes());
      j.end_object();
    }
    j.end_array();
    j.end_object();
  }
  j.end_object();
  out += '\n';
  return out;
}

}  // namespace objprof::analysis
