#include "objprof/analysis/report_html.h"

#include "chain_format.h"
#include "fmt_format.h"
#include "format_util.h"
#include "path_format.h"
#include "svg_chart.h"
#include "text_table.h"

#include <iterator>

namespace objprof::analysis {

namespace {

using internal::grouped;
using internal::human_bytes;
using internal::xml_escape;

constexpr const char* kStyle = R"(
body { font-family: system-ui, sans-serif; margin: 24px auto; max-width: 1100px; color: #222; padding: 0 16px; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 32px; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0; }
th, td { border-bottom: 1px solid #e3e3e3; padding: 3px 9px; text-align: right; white-space: nowrap; }
th:first-child, td:first-child { text-align: left; }
th { background: #f3f3f3; }
.warn { color: #a00; font-weight: bold; }
.chain { font-family: monospace; font-size: 12px; white-space: pre-wrap; word-break: break-all; background: #f7f7f7; padding: 6px; }
svg.chart { max-width: 100%; height: auto; display: block; margin: 8px 0 20px; border: 1px solid #eee; }
.hint { color: #276; font-weight: bold; }
)";

std::string esc(const std::string& s) { return xml_escape(s); }

class Html {
 public:
  std::string out;
  template <class... A>
  void f(fmt::format_string<A...> s, A&&... a) {
    fmt::format_to(std::back_inserter(out), s, std::forward<A>(a)...);
  }
  void table_head(std::initializer_list<std::string> cols) {
    out += "<table><tr>";
    for (const std::string& c : cols) f("<th>{}</th>", esc(c));
    out += "</tr>\n";
  }
  void table_head(const std::vector<std::string>& cols) {
    out += "<table><tr>";
    for (const std::string& c : cols) f("<th>{}</th>", esc(c));
    out += "</tr>\n";
  }
  void row(const std::vector<std::string>& cells) {
    out += "<tr>";
    for (const std::string& c : cells) f("<td>{}</td>", esc(c));
    out += "</tr>\n";
  }
};

std::string bytes_axis(double v) { return human_bytes(static_cast<std::uint64_t>(v < 0 ? 0 : v)); }

// Over-time charts start at the origin: nothing is live before the first allocation.
void from_origin(std::vector<double>& x, std::vector<internal::Series>& series) {
  if (x.empty() || x.front() <= 0) return;
  x.insert(x.begin(), 0.0);
  for (internal::Series& s : series) s.values.insert(s.values.begin(), 0.0);
}

void group_section(Html& h, const Report& r, const GroupTable& g, const char* id, const char* title) {
  h.f("<h2 id=\"{}\">{}</h2>\n<p>Top {} of {} by allocated bytes; lifetime buckets count dead objects ({}).</p>\n", id, title,
      g.rows.size(), g.groups, r.options.buckets.clock == Clock::kGcs ? "GCs survived" : "bytes allocated");
  std::vector<std::string> cols{group_by_name(g.by), "allocated", "bytes", "live", "live bytes", "mean life"};
  for (const std::string& l : r.options.buckets.labels()) cols.push_back(l);
  h.table_head(cols);
  auto add = [&](const GroupRow& row) {
    std::vector<std::string> cells{row.name, grouped(row.allocated_objects), human_bytes(row.allocated_bytes), grouped(row.live_objects),
                                   human_bytes(row.live_bytes),
                                   row.dead_objects ? (r.options.buckets.clock == Clock::kGcs ? fmt::format("{:.1f} GCs", row.mean_lifetime_gcs)
                                                                                               : human_bytes(static_cast<std::uint64_t>(row.mean_lifetime_bytes)))
                                                    : "-"};
    for (std::uint64_t n : row.lifetime_buckets) cells.push_back(grouped(n));
    h.row(cells);
  };
  for (const GroupRow& row : g.rows) add(row);
  if (g.groups > 1) add(g.total);
  h.out += "</table>\n";
}

}  // namespace

std::string render_html(const Report& r) {
  const TraceAnalysis& a = *r.analysis;
  Html h;
  const std::string name = r.options.trace_name.empty() ? "trace" : r.options.trace_name;
  h.f("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>objprof report: {}</title>\n"
      "<link rel=\"icon\" href=\"data:,\">\n<style>{}</style>\n</head>\n<body>\n<h1>objprof report: {}</h1>\n",
      esc(name), kStyle, esc(name));

  // Summary.
  h.out += "<section id=\"summary\">\n<ul>\n";
  h.f("<li>trace: {} chunks, {}, {}</li>\n", grouped(a.stats.chunks), human_bytes(a.stats.trace_bytes),
      a.complete ? "complete" : a.truncated ? "<span class=\"warn\">truncated</span>" : "<span class=\"warn\">incomplete</span>");
  for (const std::string& w : a.warnings) h.f("<li class=\"warn\">warning: {}</li>\n", esc(w));
  h.f("<li>{} GCs; {} objects ({}) allocated by {} thread(s) at {} site(s); {} live at the end ({})</li>\n", grouped(a.gcs.size()),
      grouped(a.objects.size()), human_bytes(a.total_bytes), a.threads.size(), a.sites.size(), grouped(a.live_objects),
      human_bytes(a.live_bytes));
  h.f("<li>{} moves, {} frees, {} access bits ({} resolved to objects)</li>\n", grouped(a.stats.moves), grouped(a.stats.frees + a.stats.range_freed),
      grouped(a.stats.marked_bits), grouped(a.stats.resolved_bits));
  if (r.options.filter.min_age_gcs)
    h.f("<li>--min-age={}: {} of {} objects shown</li>\n", r.options.filter.min_age_gcs, grouped(r.objects_considered),
        grouped(a.objects.size()));
  h.out += "</ul>\n</section>\n";

  // Leaks.
  h.f("<section id=\"leaks\">\n<h2>Possible leaks</h2>\n<p>Objects alive at the end and untouched for at least {} GCs{}, by allocation "
      "site, ranked by stale byte-epochs (size &times; idle GCs).</p>\n",
      r.leaks.options.stale_after,
      r.leaks.options.stale_after_bytes == 0 ? "" : " while their thread made progress (docs/analyzer.md, Staleness)");
  if (r.leaks.sites.empty()) {
    h.out += "<p>None.</p>\n";
  } else {
    h.table_head({"#", "site", "objects", "bytes", "max idle GCs", "reported online", "byte-epochs"});
    for (std::size_t i = 0; i < r.leaks.sites.size(); ++i) {
      const LeakSite& s = r.leaks.sites[i];
      h.row({fmt::format("{}", i + 1), site_label(a.sites[s.site]), grouped(s.objects), human_bytes(s.bytes), grouped(s.max_idle_epochs),
             grouped(s.reported_online), grouped(s.score)});
    }
    h.out += "</table>\n";
    for (std::size_t i = 0; i < r.leaks.sites.size(); ++i) {
      const LeakSite& s = r.leaks.sites[i];
      h.f("<p>#{} most stale object: {}, idle {} GCs</p><div class=\"chain\">{}</div>\n", i + 1, s.oldest_chain.id,
          s.oldest_metrics.idle_epochs, esc(internal::chain_text(a, s.oldest_chain, 40)));
      if (s.path != kNoIndex)
        h.f("<p>Path from a GC root:</p><div class=\"chain path\">{}</div>\n", esc(internal::path_text(a, a.paths[s.path])));
    }
  }
  h.out += "</section>\n";

  // Charts.
  h.out += "<section id=\"charts\">\n<h2>Heap composition by cohort</h2>\n";
  {
    std::vector<double> x(r.cohorts.timeline.clocks.begin(), r.cohorts.timeline.clocks.end());
    std::vector<internal::Series> s;
    for (const Cohort& c : r.cohorts.cohorts)
      s.push_back({fmt::format("cohort {} @{}", c.index, human_bytes(c.start_bytes)),
                   std::vector<double>(c.live_bytes.begin(), c.live_bytes.end())});
    std::vector<double> x0 = x;
    from_origin(x0, s);
    h.out += internal::stacked_area_chart(fmt::format("Live bytes per cohort of {} (oldest at the bottom)", human_bytes(r.cohorts.cohort_bytes)),
                                          x0, s, "time (bytes allocated)", "live bytes", bytes_axis, bytes_axis);
    std::vector<internal::Series> n;
    for (const Cohort& c : r.cohorts.cohorts)
      n.push_back({fmt::format("cohort {}", c.index), std::vector<double>(c.live_objects.begin(), c.live_objects.end())});
    from_origin(x, n);
    h.out += internal::stacked_area_chart("Live objects per cohort", x, n, "time (bytes allocated)", "live objects", bytes_axis,
                                          internal::short_number);
  }
  h.out += "<h2>Object sizes</h2>\n";
  {
    std::vector<std::string> cats;
    internal::Series alloc{"allocated", {}}, live{"live at the end", {}};
    for (const SizeBin& b : r.sizes.bins) {
      cats.push_back(b.min == b.max ? fmt::format("{}", b.min) : fmt::format("≤{}", b.max));
      alloc.values.push_back(static_cast<double>(b.allocated_objects));
      live.values.push_back(static_cast<double>(b.live_objects));
    }
    h.out += internal::bar_chart("Objects by size (bytes)", cats, {alloc, live}, "objects", internal::short_number);
  }
  h.out += "<h2>Lifetimes</h2>\n";
  {
    std::vector<std::string> cats = r.options.buckets.labels();
    internal::Series dead{r.options.buckets.clock == Clock::kGcs ? "dead objects by GCs survived" : "dead objects by bytes allocated", {}};
    for (std::uint64_t n : r.sites.total.lifetime_buckets) dead.values.push_back(static_cast<double>(n));
    cats.push_back("alive");
    dead.values.push_back(0);
    internal::Series live{"alive at the end", std::vector<double>(cats.size(), 0.0)};
    live.values.back() = static_cast<double>(r.sites.total.live_objects);
    h.out += internal::bar_chart("Object lifetimes", cats, {dead, live}, "objects", internal::short_number);
  }
  h.out += "<h2>Heap volume by thread</h2>\n";
  {
    std::vector<double> x(r.thread_volume.timeline.clocks.begin(), r.thread_volume.timeline.clocks.end());
    std::vector<internal::Series> s;
    for (const LiveSeries& t : r.thread_volume.series) {
      const Thread& th = a.threads[t.group];
      s.push_back({th.name.empty() ? fmt::format("thread {}", th.id) : th.name,
                   std::vector<double>(t.live_bytes.begin(), t.live_bytes.end())});
    }
    from_origin(x, s);
    h.out += internal::stacked_area_chart("Live bytes by allocating thread", x, s, "time (bytes allocated)", "live bytes", bytes_axis,
                                          bytes_axis);
  }
  if (r.replay) {
    h.out += "<h2>Heap replay</h2>\n<p>Allocation (black) and collection (gray) in an address window over time; see <code>objprof replay</code>.</p>\n";
    h.out += replay_svg(a, *r.replay);
  }
  h.out += "</section>\n";

  group_section(h, r, r.sites, "sites", "Allocation sites");
  group_section(h, r, r.types, "types", "Types");
  group_section(h, r, r.threads, "threads", "Threads");

  if (!r.survival.rows.empty() && !r.survival.thresholds.empty()) {
    h.f("<h2 id=\"survival\">Survival by site</h2>\n<p>Share of each site's objects that survived N GCs. "
        "<span class=\"hint\">pretenure</span>: at least {:.0f}% survive {} GCs.</p>\n",
        100 * r.survival.options.pretenure_rate, r.survival.options.pretenure_gcs);
    std::vector<std::string> cols{"site", "objects"};
    for (std::uint32_t n : r.survival.thresholds) cols.push_back(fmt::format("{} GC{}", n, n == 1 ? "" : "s"));
    cols.push_back("hint");
    h.table_head(cols);
    for (const SurvivalRow& s : r.survival.rows) {
      std::vector<std::string> cells{site_label(a.sites[s.site]), grouped(s.objects)};
      for (std::size_t k = 0; k < s.eligible.size(); ++k)
        cells.push_back(s.eligible[k] ? internal::percent(static_cast<double>(s.survived[k]), static_cast<double>(s.eligible[k])) : "-");
      cells.push_back(s.pretenure ? "pretenure" : "");
      h.row(cells);
    }
    h.out += "</table>\n";
  }

  if (!r.cohorts.cohorts.empty()) {
    h.f("<h2 id=\"cohorts\">Cohorts of {}</h2>\n", human_bytes(r.cohorts.cohort_bytes));
    h.table_head({"cohort", "starts at", "allocated", "bytes", "live at end", "live bytes", "mean lifetime (bytes)"});
    for (const Cohort& c : r.cohorts.cohorts)
      h.row({fmt::format("{}", c.index), human_bytes(c.start_bytes), grouped(c.allocated_objects), human_bytes(c.allocated_bytes),
             grouped(c.live_objects.back()), human_bytes(c.live_bytes.back()),
             c.dead_objects ? human_bytes(static_cast<std::uint64_t>(c.mean_lifetime_bytes)) : "-"});
    h.out += "</table>\n";
  }

  if (r.diff) {
    const HeapDiff& d = *r.diff;
    h.f("<h2 id=\"diff\">Live heap diff: after GC {} &rarr; after {}</h2>\n<p>{} kept ({}), {} died ({}), {} born ({}), by object identity.</p>\n",
        d.from, d.to == a.end_epoch ? std::string("the end") : fmt::format("GC {}", d.to), grouped(d.kept.objects), human_bytes(d.kept.bytes),
        grouped(d.died.objects), human_bytes(d.died.bytes), grouped(d.born.objects), human_bytes(d.born.bytes));
    h.table_head({"site", "kept", "died", "born", "net bytes"});
    for (const HeapDiffRow& row : d.rows)
      h.row({site_label(a.sites[row.site]), grouped(row.kept.objects), grouped(row.died.objects), grouped(row.born.objects),
             fmt::format("{:+}", row.net_bytes())});
    h.out += "</table>\n";
  }

  if (!a.gcs.empty()) {
    h.f("<h2 id=\"gcs\">GCs</h2>\n<p>{} collections{}.</p>\n", grouped(a.gcs.size()), a.gcs.size() > r.options.top ? fmt::format(" (the first {} listed)", r.options.top) : "");
    h.table_head({"epoch", "kind", "at (bytes)", "access bits", "freed", "freed bytes", "moved", "live after", "live bytes after"});
    for (std::size_t i = 0; i < a.gcs.size() && i < r.options.top; ++i) {
      const GcRecord& g = a.gcs[i];
      h.row({fmt::format("{}", g.epoch), trace::gc_kind_name(g.kind), human_bytes(g.bytes_begin), grouped(g.marked_bits), grouped(g.freed_objects),
             human_bytes(g.freed_bytes), grouped(g.moved_objects), grouped(g.live_objects_after), human_bytes(g.live_bytes_after)});
    }
    h.out += "</table>\n";
  }
  h.out += "</body>\n</html>\n";
  return std::move(h.out);
}

}  // namespace objprof::analysis
