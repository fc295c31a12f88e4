// `objprof replay TRACE --window=ADDR:BYTES --out=FILE.svg [--object=ID]`: the paper's heap
// replay (Fig. 7) as an SVG picture: allocation (black) and collection (gray) in an address
// window over time, and, with --object, that object's path through its moves (the window
// then defaults to the addresses it occupied).
#include "analysis_input.h"
#include "command.h"

#include <objprof/analysis/heap_replay.h>

#include <fmt/core.h>

#include <memory>

namespace objprof::cli {
namespace {

struct ReplayArgs {
  std::string path, window, out;
  std::int64_t object = -1;
  std::size_t max_segments = 100000;
  AnalysisInput input;
};

int replay_error(const std::string& msg) {
  fmt::print(stderr, "objprof replay: error: {}\n", msg);
  return 1;
}

int run_replay(const ReplayArgs& o) {
  using namespace objprof::analysis;
  ReplayOptions ro;
  ro.max_segments = o.max_segments;
  if (!o.window.empty()) {
    auto w = parse_replay_window(o.window);
    if (!w.ok()) return replay_error(w.error().message);
    ro.window = *w;
  } else if (o.object < 0) {
    return replay_error("give --window=ADDR:BYTES, --object=ID, or both");
  }
  if (o.object >= 0) ro.follow = static_cast<ObjectId>(o.object);
  const WorkerCap cap(o.input);
  auto a = analyze_with_progress("objprof replay", o.path, o.input);
  if (!a.ok()) return replay_error(a.error().message);
  auto r = heap_replay(*a, ro);
  if (!r.ok()) return replay_error(r.error().message);
  if (Status st = write_output(o.out, replay_svg(*a, *r)); !st.ok()) return replay_error(st.error().message);
  if (!o.out.empty() && o.out != "-")
    fmt::print("objprof replay: wrote {}: window [{:#x}, {:#x}), {} segments ({} drawn), {} GCs\n", o.out, r->window.begin,
               r->window.begin + r->window.bytes, r->segments_total, r->segments.size(), r->gc_clocks.size());
  return 0;
}

const RegisterCommand kReplay([](CLI::App& app) -> std::function<int()> {
  auto o = std::make_shared<ReplayArgs>();
  CLI::App* cmd = app.add_subcommand("replay", "Draw allocation and collection in an address window over time (SVG)");
  cmd->add_option("trace", o->path, "trace file")->required();
  cmd->add_option("--window", o->window, "ADDR:BYTES, e.g. 0x7f0000000000:16K");
  cmd->add_option("--object", o->object, "follow this object (an id from objprof report) through its moves");
  cmd->add_option("--out", o->out, "SVG file (default: stdout)");
  cmd->add_option("--max-segments", o->max_segments, "draw at most this many object stays, thinned evenly over time (default 100000)");
  o->input.add_to(cmd);
  return [o] { return run_replay(*o); };
});

}  // namespace
}  // namespace objprof::cli
