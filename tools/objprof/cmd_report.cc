// `objprof report TRACE`: the offline analyzer's report (docs/analyzer.md): leaks, per site /
// type / thread tables, survival and pretenuring hints, cohorts, size demographics, heap
// volume per thread, an optional live-heap diff; as text, JSON, CSV or a self-contained HTML
// page. Truncated traces are analyzed up to their last whole chunk with a warning; corrupt
// ones are refused with the reader's error.
#include "analysis_input.h"
#include "command.h"

#include <objprof/analysis/byte_size.h>
#include <objprof/analysis/report.h>
#include <objprof/analysis/report_csv.h>
#include <objprof/analysis/report_html.h>
#include <objprof/analysis/report_json.h>
#include <objprof/analysis/report_text.h>

#include <fmt/core.h>

#include <memory>

namespace objprof::cli {
namespace {

struct ReportArgs {
  std::string path, format = "text", out, buckets, bucket_clock = "gcs", diff, table = "sites", window, min_size;
  std::string stale_bytes = "auto";
  std::size_t top = 20;
  std::uint32_t min_age = 0, stale_after = 4;
  std::string cohort;
  std::int64_t follow = -1;
  AnalysisInput input;
};

int report_error(const std::string& msg) {
  fmt::print(stderr, "objprof report: error: {}\n", msg);
  return 1;
}

int run_report(const ReportArgs& o) {
  using namespace objprof::analysis;
  ReportOptions ro;
  ro.trace_name = o.path;
  ro.top = o.top;
  ro.filter.min_age_gcs = o.min_age;
  ro.leaks.stale_after = o.stale_after;
  if (o.stale_bytes != "auto") {
    auto b = parse_byte_size(o.stale_bytes, "--stale-bytes");
    if (!b.ok()) return report_error(b.error().message);
    ro.leaks.stale_after_bytes = *b;
  }
  if (!o.min_size.empty()) {
    auto b = parse_byte_size(o.min_size, "--min-size");
    if (!b.ok()) return report_error(b.error().message);
    ro.leaks.min_size = *b;
  }
  const Clock clock = o.bucket_clock == "bytes" ? Clock::kBytes : Clock::kGcs;
  if (o.bucket_clock != "gcs" && o.bucket_clock != "bytes") return report_error("--bucket-clock must be gcs or bytes");
  if (!o.buckets.empty()) {
    auto b = parse_lifetime_buckets(o.buckets, clock);
    if (!b.ok()) return report_error(b.error().message);
    ro.buckets = *b;
  } else if (clock == Clock::kBytes) {
    ro.buckets = *parse_lifetime_buckets("0,64K,256K,1M,4M,16M,64M", Clock::kBytes);
  }
  if (!o.cohort.empty()) {
    auto b = parse_byte_size(o.cohort, "--cohort");
    if (!b.ok()) return report_error(b.error().message);
    if (*b == 0) return report_error("--cohort must be at least 1 byte");
    ro.cohorts.cohort_bytes = *b;
  }
  if (!o.window.empty()) {
    auto w = parse_replay_window(o.window);
    if (!w.ok()) return report_error(w.error().message);
    ro.replay_options.window = *w;
  }
  if (o.follow >= 0) ro.replay_options.follow = static_cast<ObjectId>(o.follow);
  if (o.format != "text" && o.format != "json" && o.format != "csv" && o.format != "html")
    return report_error(fmt::format("--format '{}' is not text, json, csv or html", o.format));
  std::optional<CsvTable> table;
  if (o.format == "csv") {
    auto t = parse_csv_table(o.table);
    if (!t.ok()) return report_error(t.error().message);
    table = *t;
  }
  ro.replay = o.format == "html";

  const WorkerCap cap(o.input);
  auto a = analyze_with_progress("objprof report", o.path, o.input);
  if (!a.ok()) return report_error(a.error().message);
  if (!o.diff.empty()) {
    auto d = parse_diff_epochs(o.diff, *a);
    if (!d.ok()) return report_error(d.error().message);
    ro.diff = *d;
  }
  if (table == CsvTable::kObjects) {
    std::FILE* f = o.out.empty() || o.out == "-" ? stdout : std::fopen(o.out.c_str(), "wb");
    if (!f) return report_error(fmt::format("cannot create '{}'", o.out));
    Status st = write_objects_csv(*a, ro.filter, f);
    if (f != stdout && std::fclose(f) != 0 && st.ok()) st = make_error(ErrorCode::kIo, fmt::format("closing '{}' failed", o.out));
    return st.ok() ? 0 : report_error(st.error().message);
  }
  auto report = build_report(*a, ro);
  if (!report.ok()) return report_error(report.error().message);
  std::string text;
  if (o.format == "text") text = render_text(*report);
  else if (o.format == "json") text = render_json(*report);
  else if (o.format == "html") text = render_html(*report);
  else {
    auto csv = render_csv(*report, *table);
    if (!csv.ok()) return report_error(csv.error().message);
    text = std::move(*csv);
  }
  if (Status st = write_output(o.out, text); !st.ok()) return report_error(st.error().message);
  return 0;
}

const RegisterCommand kReport([](CLI::App& app) -> std::function<int()> {
  auto o = std::make_shared<ReportArgs>();
  CLI::App* cmd = app.add_subcommand("report", "Analyze a trace: leaks, lifetimes, cohorts, sizes, threads (docs/analyzer.md)");
  cmd->add_option("trace", o->path, "trace file")->required();
  cmd->add_option("--format", o->format, "text (default), json, csv or html");
  cmd->add_option("--out", o->out, "write here instead of stdout");
  cmd->add_option("--top", o->top, "rows per table (default 20)");
  cmd->add_option("--min-age", o->min_age, "leave out objects that lived fewer than N GCs");
  cmd->add_option("--stale-after", o->stale_after, "leak report: idle GCs before an object counts as stale (default 4)");
  cmd->add_option("--stale-bytes", o->stale_bytes,
                  "leak report: and idle while its thread allocated this much (e.g. 64K; 0: GC_K alone; default auto: "
                  "the thread's busiest epoch)");
  cmd->add_option("--min-size", o->min_size, "leak report: leave out smaller objects (e.g. 1K)");
  cmd->add_option("--buckets", o->buckets, "lifetime bucket bounds, e.g. 0,1,2,4,8 (GCs) or 0,64K,1M (bytes)");
  cmd->add_option("--bucket-clock", o->bucket_clock, "gcs (default) or bytes");
  cmd->add_option("--cohort", o->cohort, "cohort size in bytes allocated (default: about 32 cohorts)");
  cmd->add_option("--diff", o->diff, "live-heap diff between two epochs, e.g. 3:end");
  cmd->add_option("--table", o->table, "csv: leaks, sites, types, threads, survival, cohorts, sizes, gcs, diff or objects");
  cmd->add_option("--window", o->window, "html: heap replay window ADDR:BYTES");
  cmd->add_option("--follow", o->follow, "html: draw this object's path in the replay");
  o->input.add_to(cmd);
  return [o] { return run_report(*o); };
});

}  // namespace
}  // namespace objprof::cli
