#include "objprof/analysis/report_text.h"

#include "chain_format.h"
#include "fmt_format.h"
#include "format_util.h"
#include "path_format.h"
#include "text_table.h"

#include <algorithm>
#include <iterator>
#include <map>

namespace objprof::analysis {

namespace {

using internal::grouped;
using internal::human_bytes;
using internal::TextTable;

std::string fixed1(double v) { return fmt::format("{:.1f}", v); }

void summary(std::string& out, const Report& r) {
  const TraceAnalysis& a = *r.analysis;
  auto o = std::back_inserter(out);
  fmt::format_to(o, "objprof report: {}\n", r.options.trace_name.empty() ? "(trace)" : r.options.trace_name);
  fmt::format_to(o, "  trace: {} chunks, {}, {}\n", grouped(a.stats.chunks), human_bytes(a.stats.trace_bytes),
                 a.complete ? "complete" : a.truncated ? "TRUNCATED" : "INCOMPLETE (no end record)");
  for (const std::string& w : a.warnings) fmt::format_to(o, "  warning: {}\n", w);
  fmt::format_to(o, "  {} GCs; {} objects ({}) allocated by {} thread(s) at {} site(s); {} live at the end ({})\n",
                 grouped(a.gcs.size()), grouped(a.objects.size()), human_bytes(a.total_bytes), a.threads.size(), a.sites.size(),
                 grouped(a.live_objects), human_bytes(a.live_bytes));
  const std::string ranges = a.stats.free_ranges == 0 ? std::string()
                                                      : fmt::format(" ({} of them in {} free ranges)", grouped(a.stats.range_freed),
                                                                    grouped(a.stats.free_ranges));
  fmt::format_to(o, "  {} moves, {} frees{}; {} access bits, {} resolved to objects, {} to no object\n", grouped(a.stats.moves),
                 grouped(a.stats.frees + a.stats.range_freed), ranges, grouped(a.stats.marked_bits), grouped(a.stats.resolved_bits),
                 grouped(a.stats.unresolved_bits));
  fmt::format_to(o, "  analyzer memory: {} at peak ({:.1f} bytes per object)\n", human_bytes(a.peak_memory_bytes),
                 a.objects.size() ? static_cast<double>(a.peak_memory_bytes) / static_cast<double>(a.objects.size()) : 0.0);
  if (r.options.filter.min_age_gcs > 0)
    fmt::format_to(o, "  --min-age={}: {} of {} objects ({}) are at least {} GCs old and shown\n", r.options.filter.min_age_gcs,
                   grouped(r.objects_considered), grouped(a.objects.size()), human_bytes(r.bytes_considered), r.options.filter.min_age_gcs);
}

void leaks(std::string& out, const Report& r) {
  const TraceAnalysis& a = *r.analysis;
  const LeakReport& l = r.leaks;
  auto o = std::back_inserter(out);
  const std::string progress = l.options.stale_after_bytes == StaleRule::kAutoBytes
                                   ? " and while their thread allocated as much as in its busiest epoch"
                               : l.options.stale_after_bytes == 0
                                   ? ""
                                   : fmt::format(" and while their thread allocated {}", human_bytes(l.options.stale_after_bytes));
  fmt::format_to(o, "\nPossible leaks: objects alive at the end, untouched for at least {} GCs{}{}; sites by stale byte-epochs\n",
                 l.options.stale_after, progress,
                 l.options.min_size ? fmt::format(", at least {}", human_bytes(l.options.min_size)) : "");
  if (l.sites.empty()) {
    out += "  none\n";
    return;
  }
  TextTable t({"#  site", "objects", "bytes", "max idle GCs", "online", "byte-epochs"});
  for (std::size_t i = 0; i < l.sites.size(); ++i) {
    const LeakSite& s = l.sites[i];
    t.row({fmt::format("{:<2} {}", i + 1, site_label(a.sites[s.site])), grouped(s.objects), human_bytes(s.bytes),
           grouped(s.max_idle_epochs), grouped(s.reported_online), grouped(s.score)});
  }
  t.render(out);
  fmt::format_to(o, "  total: {} stale objects, {}\n", grouped(l.objects), human_bytes(l.bytes));
  for (std::size_t i = 0; i < l.sites.size(); ++i) {
    const LeakSite& s = l.sites[i];
    const Chain& c = s.oldest_chain;
    const AllocContext& ctx = a.contexts[c.context];
    fmt::format_to(o, "  #{} oldest: object {} {} ({}), thread {}, idle {} GCs / {} allocated since\n      {}\n", i + 1, c.id,
                   a.types[ctx.type].defined ? a.types[ctx.type].name : fmt::format("type#{}", a.types[ctx.type].id),
                   human_bytes(c.size), a.threads[ctx.thread].name.empty() ? fmt::format("#{}", a.threads[ctx.thread].id) : a.threads[ctx.thread].name,
                   s.oldest_metrics.idle_epochs, human_bytes(s.oldest_metrics.idle_bytes), internal::chain_text(a, c));
    if (s.path != kNoIndex) fmt::format_to(o, "      path from a root: {}\n", internal::path_text(a, a.paths[s.path]));
  }
}

void group(std::string& out, const Report& r, const GroupTable& g, const char* title) {
  const LifetimeBuckets& b = r.options.buckets;
  fmt::format_to(std::back_inserter(out), "\n{} (top {} of {} by allocated bytes; lifetimes of dead objects in {})\n", title,
                 g.rows.size(), g.groups, b.clock == Clock::kGcs ? "GCs survived" : "bytes allocated");
  std::vector<std::string> headers{group_by_name(g.by), "allocated", "bytes", "live", "live bytes", "mean life"};
  for (const std::string& l : b.labels()) headers.push_back(l);
  TextTable t(headers);
  auto add = [&](const GroupRow& row) {
    std::vector<std::string> cells{row.name, grouped(row.allocated_objects), human_bytes(row.allocated_bytes), grouped(row.live_objects),
                                   human_bytes(row.live_bytes),
                                   row.dead_objects ? (b.clock == Clock::kGcs ? fixed1(row.mean_lifetime_gcs)
                                                                               : human_bytes(static_cast<std::uint64_t>(row.mean_lifetime_bytes)))
                                                    : "-"};
    for (std::uint64_t n : row.lifetime_buckets) cells.push_back(grouped(n));
    t.row(std::move(cells));
  };
  for (const GroupRow& row : g.rows) add(row);
  if (g.groups > 1) add(g.total);
  t.render(out);
}

void threads(std::string& out, const Report& r) {
  const TraceAnalysis& a = *r.analysis;
  if (a.threads.empty()) return;
  out += "\nThreads: lifetime and heap volume (live bytes after the last GC and at the end)\n";
  TextTable t({"thread", "id", "attached", "ended", "allocated", "live at end"});
  for (const LiveSeries& s : r.thread_volume.series) {
    const Thread& th = a.threads[s.group];
    t.row({th.name.empty() ? "-" : th.name, grouped(th.id), fmt::format("epoch {}", th.attach_epoch),
           th.end_epoch == kNoEpoch ? "running" : fmt::format("epoch {}", th.end_epoch), human_bytes(s.allocated_bytes),
           human_bytes(s.live_bytes.empty() ? 0 : s.live_bytes.back())});
  }
  t.render(out);
}

void survival(std::string& out, const Report& r) {
  const TraceAnalysis& a = *r.analysis;
  const SurvivalTable& s = r.survival;
  if (s.rows.empty() || s.thresholds.empty()) return;
  fmt::format_to(std::back_inserter(out),
                 "\nSurvival by site: share of objects that survived N GCs (pretenure: >= {:.0f}% survive {} GCs, >= {} objects)\n",
                 100 * s.options.pretenure_rate, s.options.pretenure_gcs, s.options.pretenure_min_objects);
  std::vector<std::string> headers{"site", "objects"};
  for (std::uint32_t n : s.thresholds) headers.push_back(fmt::format("{}", n));
  headers.push_back("hint");
  TextTable t(headers);
  for (const SurvivalRow& row : s.rows) {
    std::vector<std::string> cells{site_label(a.sites[row.site]), grouped(row.objects)};
    for (std::size_t k = 0; k < s.thresholds.size(); ++k)
      cells.push_back(row.eligible[k] ? internal::percent(static_cast<double>(row.survived[k]), static_cast<double>(row.eligible[k])) : "-");
    cells.push_back(row.pretenure ? "pretenure" : "");
    t.row(std::move(cells));
  }
  t.render(out);
}

void cohorts(std::string& out, const Report& r) {
  const CohortView& c = r.cohorts;
  if (c.cohorts.empty()) return;
  fmt::format_to(std::back_inserter(out), "\nCohorts of {} allocated (live at the end; mean lifetime of the dead, in bytes allocated)\n",
                 human_bytes(c.cohort_bytes));
  TextTable t({"cohort", "allocated", "bytes", "live", "live bytes", "mean lifetime"});
  for (const Cohort& k : c.cohorts)
    t.row({fmt::format("{} @{}", k.index, human_bytes(k.start_bytes)), grouped(k.allocated_objects), human_bytes(k.allocated_bytes),
           grouped(k.live_objects.empty() ? 0 : k.live_objects.back()), human_bytes(k.live_bytes.empty() ? 0 : k.live_bytes.back()),
           k.dead_objects ? human_bytes(static_cast<std::uint64_t>(k.mean_lifetime_bytes)) : "-"});
  t.render(out);
}

void sizes(std::string& out, const Report& r) {
  const SizeDemographics& s = r.sizes;
  if (s.bins.empty()) return;
  fmt::format_to(std::back_inserter(out), "\nObject sizes ({})\n", s.exact ? "every size" : "power-of-two bins");
  TextTable t({"size", "allocated", "bytes", "live", "live bytes"});
  for (const SizeBin& b : s.bins)
    t.row({b.min == b.max ? fmt::format("{} B", b.min) : fmt::format("{}-{} B", b.min, b.max), grouped(b.allocated_objects),
           human_bytes(b.allocated_bytes), grouped(b.live_objects), human_bytes(b.live_bytes)});
  t.render(out);
}

void gcs(std::string& out, const Report& r) {
  const TraceAnalysis& a = *r.analysis;
  if (a.gcs.empty()) return;
  std::map<std::string, std::uint64_t> kinds;
  std::uint64_t freed = 0, moved = 0, peak = 0;
  std::uint32_t peak_epoch = 0;
  for (const GcRecord& g : a.gcs) {
    ++kinds[trace::gc_kind_name(g.kind)];
    freed += g.freed_objects;
    moved += g.moved_objects;
    if (g.live_bytes_after > peak) {
      peak = g.live_bytes_after;
      peak_epoch = g.epoch;
    }
  }
  std::string k;
  for (const auto& [name, n] : kinds) k += fmt::format("{}{} {}", k.empty() ? "" : ", ", grouped(n), name);
  fmt::format_to(std::back_inserter(out), "\nGCs: {}; {} objects freed, {} moved; largest live heap after a GC: {} (epoch {})\n", k,
                 grouped(freed), grouped(moved), human_bytes(peak), peak_epoch);
}

void diff(std::string& out, const Report& r) {
  if (!r.diff) return;
  const TraceAnalysis& a = *r.analysis;
  const HeapDiff& d = *r.diff;
  auto name = [&](std::uint32_t e) { return e == a.end_epoch ? std::string("the end") : fmt::format("GC {}", e); };
  fmt::format_to(std::back_inserter(out),
                 "\nLive heap diff, after {} -> after {} (by object identity): {} kept ({}), {} died ({}), {} born ({})\n", name(d.from),
                 name(d.to), grouped(d.kept.objects), human_bytes(d.kept.bytes), grouped(d.died.objects), human_bytes(d.died.bytes),
                 grouped(d.born.objects), human_bytes(d.born.bytes));
  TextTable t({"site", "kept", "died", "born", "net bytes"});
  for (const HeapDiffRow& row : d.rows) {
    const std::int64_t net = row.net_bytes();
    t.row({site_label(a.sites[row.site]), grouped(row.kept.objects), grouped(row.died.objects), grouped(row.born.objects),
           fmt::format("{}{}", net < 0 ? "-" : "+", human_bytes(static_cast<std::uint64_t>(net < 0 ? -net : net)))});
  }
  t.render(out);
}

}  // namespace

std::string render_text(const Report& r) {
  std::string out;
  summary(out, r);
  leaks(out, r);
  group(out, r, r.sites, "Allocation sites");
  group(out, r, r.types, "Types");
  group(out, r, r.threads, "Threads");
  threads(out, r);
  survival(out, r);
  cohorts(out, r);
  sizes(out, r);
  gcs(out, r);
  diff(out, r);
  return out;
}

}  // namespace objprof::analysis
