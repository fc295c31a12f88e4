// `objprof export TRACE --to=perfetto [--out=FILE]`: the Chrome trace-event JSON format, so
// GCs, the live heap and per-site counters open in the Perfetto UI (ui.perfetto.dev) or
// chrome://tracing. Time is the bytes-allocated clock (1 us = 1 KiB allocated).
#include "analysis_input.h"
#include "command.h"

#include <objprof/analysis/perfetto_export.h>

#include <fmt/core.h>

#include <memory>

namespace objprof::cli {
namespace {

struct ExportArgs {
  std::string path, to = "perfetto", out;
  std::size_t top_sites = 8;
  AnalysisInput input;
};

int export_error(const std::string& msg) {
  fmt::print(stderr, "objprof export: error: {}\n", msg);
  return 1;
}

int run_export(const ExportArgs& o) {
  if (o.to != "perfetto" && o.to != "chrome") return export_error(fmt::format("--to '{}': the only format is perfetto (Chrome trace JSON)", o.to));
  const WorkerCap cap(o.input);
  auto a = analyze_with_progress("objprof export", o.path, o.input);
  if (!a.ok()) return export_error(a.error().message);
  analysis::PerfettoOptions po;
  po.trace_name = o.path;
  po.top_sites = o.top_sites;
  if (Status st = write_output(o.out, analysis::render_perfetto(*a, po)); !st.ok()) return export_error(st.error().message);
  return 0;
}

const RegisterCommand kExport([](CLI::App& app) -> std::function<int()> {
  auto o = std::make_shared<ExportArgs>();
  CLI::App* cmd = app.add_subcommand("export", "Export a trace for other tools (Perfetto / Chrome trace JSON)");
  cmd->add_option("trace", o->path, "trace file")->required();
  cmd->add_option("--to", o->to, "perfetto (default)");
  cmd->add_option("--out", o->out, "output file (default: stdout)");
  cmd->add_option("--top-sites", o->top_sites, "sites with a live-bytes counter (default 8)");
  o->input.add_to(cmd);
  return [o] { return run_export(*o); };
});

}  // namespace
}  // namespace objprof::cli
