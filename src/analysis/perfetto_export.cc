#include "objprof/analysis/perfetto_export.h"

#include "chain_format.h"
#include "json_writer.h"

#include "objprof/analysis/live_series.h"

#include <fmt/core.h>

#include <algorithm>

namespace objprof::analysis {

namespace {

using internal::JsonWriter;

constexpr std::uint32_t kPid = 1;
constexpr std::uint32_t kGcTid = 1;
constexpr std::uint32_t kThreadTidBase = 100;

double us(std::uint64_t bytes) { return static_cast<double>(bytes) / 1024.0; }

void meta(JsonWriter& j, const char* what, std::uint32_t tid, const std::string& name) {
  j.begin_object();
  j.field("ph", "M");
  j.field("pid", kPid);
  if (tid) j.field("tid", tid);
  j.field("name", what);
  j.key("args").begin_object().field("name", name).end_object();
  j.end_object();
}

void counter(JsonWriter& j, const std::string& name, double ts, const std::vector<std::pair<std::string, double>>& values) {
  j.begin_object();
  j.field("ph", "C");
  j.field("pid", kPid);
  j.field("name", name);
  j.field("ts", ts);
  j.key("args").begin_object();
  for (const auto& [k, v] : values) j.field(k, v);
  j.end_object();
  j.end_object();
}

}  // namespace

std::string render_perfetto(const TraceAnalysis& a, const PerfettoOptions& o) {
  std::string out;
  JsonWriter j(out, false);
  j.begin_object();
  j.field("displayTimeUnit", "ms");
  j.key("otherData").begin_object();
  j.field("source", "objprof export");
  j.field("trace", o.trace_name);
  j.field("time_unit", "1 us = 1 KiB allocated");
  j.end_object();
  j.key("traceEvents").begin_array();

  meta(j, "process_name", 0, fmt::format("objprof heap: {} (time = bytes allocated)", o.trace_name.empty() ? "trace" : o.trace_name));
  meta(j, "thread_name", kGcTid, "GC");
  const double span = us(std::max<std::uint64_t>(a.end_bytes, 1024));
  const double gc_dur = std::max(1.0, span / 2000.0);  // a GC allocates nothing: give it a visible width

  std::uint64_t prev_after_bytes = 0, prev_after_objects = 0, prev_end_clock = 0, epoch_allocs = 0;
  std::vector<std::uint64_t> allocs_in_epoch(a.gcs.size() + 1, 0);
  for (ObjectId id = 0; id < a.objects.size(); ++id) {
    const std::uint32_t b = a.objects.birth_epoch(id);
    if (b < allocs_in_epoch.size() && !(a.objects.flags(id) & kBornDuringGc)) ++allocs_in_epoch[b];
  }
  for (const GcRecord& g : a.gcs) {
    epoch_allocs = allocs_in_epoch[g.epoch];
    const double ts = us(g.bytes_begin);
    counter(j, "live heap bytes", ts, {{"bytes", static_cast<double>(prev_after_bytes + (g.bytes_begin - std::min(g.bytes_begin, prev_end_clock)))}});
    counter(j, "live heap objects", ts, {{"objects", static_cast<double>(prev_after_objects + epoch_allocs)}});
    j.begin_object();
    j.field("ph", "X");
    j.field("pid", kPid);
    j.field("tid", kGcTid);
    j.field("ts", ts);
    j.field("dur", gc_dur);
    j.field("name", fmt::format("GC {} ({})", g.epoch, trace::gc_kind_name(g.kind)));
    j.field("cat", "gc");
    j.key("args").begin_object();
    internal::gc_fields_json(j, g);
    j.end_object();
    j.end_object();
    if (g.ended) {
      counter(j, "live heap bytes", ts + gc_dur, {{"bytes", static_cast<double>(g.live_bytes_after)}});
      counter(j, "live heap objects", ts + gc_dur, {{"objects", static_cast<double>(g.live_objects_after)}});
    }
    prev_after_bytes = g.live_bytes_after;
    prev_after_objects = g.live_objects_after;
    prev_end_clock = g.bytes_end;
  }

  // Live bytes of the top sites over time.
  const LiveSeriesView sites = live_series(a, GroupBy::kSite, {}, o.max_samples, o.top_sites);
  for (std::size_t s = 0; s < sites.timeline.size(); ++s) {
    std::vector<std::pair<std::string, double>> values;
    for (const LiveSeries& ls : sites.series) values.emplace_back(site_label(a.sites[ls.group]), static_cast<double>(ls.live_bytes[s]));
    if (!values.empty()) counter(j, "live bytes by site", us(sites.timeline.clocks[s]), values);
  }

  // Mutator threads.
  for (std::uint32_t t = 0; t < a.threads.size(); ++t) {
    const Thread& th = a.threads[t];
    const std::uint32_t tid = kThreadTidBase + t;
    meta(j, "thread_name", tid, th.name.empty() ? fmt::format("thread {}", th.id) : th.name);
    const std::uint64_t stop = th.end_epoch == kNoEpoch ? a.end_bytes : th.end_bytes;
    j.begin_object();
    j.field("ph", "X");
    j.field("pid", kPid);
    j.field("tid", tid);
    j.field("ts", us(th.attach_bytes));
    j.field("dur", std::max(1.0, us(stop) - us(th.attach_bytes)));
    j.field("name", th.name.empty() ? fmt::format("thread {}", th.id) : th.name);
    j.field("cat", "thread");
    j.key("args").begin_object();
    j.field("id", th.id);
    j.field("attach_epoch", th.attach_epoch);
    j.key("end_epoch");
    if (th.end_epoch == kNoEpoch) j.null();
    else j.value(th.end_epoch);
    j.end_object();
    j.end_object();
  }
  j.end_array();
  j.end_object();
  out += '\n';
  return out;
}

}  // namespace objprof::analysis
