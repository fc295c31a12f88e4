// `objprof run WORKLOAD`: runs an IR workload (sim/workloads/NAME.ir) on the simulated runtime
// with the profiler attached, prints progress at GCs and a summary with the online leak report.
#include "command.h"
#include "leak_output.h"

#include <objprof/objprof.h>

#include "sim/jit/jit.h"
#include "sim/cache_training.h"
#include "sim/heap.h"
#include "sim/heap_walker.h"
#include "sim/interp.h"
#include "sim/workloads.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace objprof::cli {
namespace {

struct RunOptions {
  std::string workload;
  std::string heap;  // empty: the workload's `; @heap` default, else 8M
  std::string gc = "semispace";
  std::string pass = "global";
  std::string barrier = "cache-racy";
  std::uint32_t stale_after = 4;
  std::uint64_t min_size = 256;
  std::string stale_bytes = "auto";
  std::string leak_view = "groups";
  std::string leaks_json;
  std::string trace;
  std::uint32_t threads = 1;
  std::uint64_t size = 0;  // 0: the workload's `; @size` default, else 1000
  std::uint64_t seed = 1;
  bool quiet = false;
  std::string exec = "interp";
  bool verbose = false;
  bool no_paths = false;
  std::vector<std::string> assume;  // allocation-marks, root-marks
  std::string cache = "everywhere";  // or "profile"
  std::string fates = "hooks";       // or "survivors", "cheaper"
};

int run_error(const std::string& msg) {
  fmt::print(stderr, "objprof run: {}\n", msg);
  return 1;
}

int run(const RunOptions& o) {
  auto wl = sim::load_workload(o.workload);
  if (!wl.ok()) return run_error(wl.error().message);

  sim::HeapOptions ho;
  if (o.gc == "semispace") ho.gc = sim::GcPolicy::kSemiSpace;
  else if (o.gc == "marksweep") ho.gc = sim::GcPolicy::kMarkSweep;
  else if (o.gc == "lazysweep") ho.gc = sim::GcPolicy::kLazySweep;
  else return run_error("--gc must be semispace, marksweep or lazysweep, not '" + o.gc + "'");
  std::string heap_text = o.heap.empty() ? wl->default_heap : o.heap;
  if (heap_text.empty()) heap_text = "8M";
  auto heap_bytes = sim::parse_size(heap_text);
  if (!heap_bytes.ok()) return run_error("--heap: " + heap_bytes.error().message);
  ho.heap_bytes = *heap_bytes;

  sim::InterpOptions io;
  if (o.pass == "none") io.pass = ir::PassKind::kNone;
  else if (o.pass == "paper") io.pass = ir::PassKind::kPaper;
  else if (o.pass == "global") io.pass = ir::PassKind::kGlobal;
  else return run_error("--pass must be none, paper or global, not '" + o.pass + "'");
  if (o.barrier == "cache-racy") io.barrier = {true, MarkMode::kRacy, true};
  else if (o.barrier == "cache-atomic") io.barrier = {true, MarkMode::kAtomic, true};
  else if (o.barrier == "nocache-racy") io.barrier = {false, MarkMode::kRacy, true};
  else if (o.barrier == "nocache-atomic") io.barrier = {false, MarkMode::kAtomic, true};
  else if (o.barrier == "cache-buffered") io.barrier = {true, MarkMode::kBuffered, true};
  else if (o.barrier == "nocache-buffered") io.barrier = {false, MarkMode::kBuffered, true};
  else return run_error("--barrier must be cache-racy, cache-atomic, cache-buffered, nocache-racy, nocache-atomic or "
                   "nocache-buffered, not '" + o.barrier + "'");
  if (io.barrier.mark == MarkMode::kBuffered && o.exec == "jit")
    return run_error("--barrier=" + o.barrier + ": the JIT emits racy and atomic marks only; buffered marks run with --exec=interp");
  io.size = o.size;
  // The workload's `; @size` default (from the file or the embedded copy), else 1000.
  if (io.size == 0) io.size = wl->default_size ? wl->default_size : 1000;
  io.seed = o.seed;
  io.threads = o.threads;
  io.module_name = o.workload;
  bool alloc_marks = false, root_marks = false;
  for (const std::string& a : o.assume) {
    if (a == "allocation-marks") alloc_marks = true;
    else if (a == "root-marks") root_marks = true;
    else return run_error("--assume takes allocation-marks or root-marks, not '" + a + "'");
  }
  io.allocation_marks = alloc_marks;
  io.roots_marked = root_marks;
  ho.mark_frame_roots = root_marks;
  if (o.cache != "everywhere" && o.cache != "profile")
    return run_error("--cache must be everywhere or profile, not '" + o.cache + "'");
  if (o.cache == "profile" && !io.barrier.cache)
    return run_error("--cache=profile: the barrier " + o.barrier + " has no cache to plan");
  if (o.cache == "profile") {
    // A tier-0 training run: interpreted, half the size, on a heap and profiler of its own.
    sim::InterpOptions training = io;
    training.size = sim::training_size(io.size);
    auto profile = sim::train_cache_profile(wl->module, ho, training);
    if (!profile.ok()) return run_error("--cache=profile: the training run failed: " + profile.error().message);
    io.cache_plan = std::make_shared<const sim::CachePlan>(sim::plan_cache(*profile, sim::CacheCosts::host(false)));
  }
  std::shared_ptr<sim::jit::Jit> jit;
  if (o.exec == "jit") {
    jit = sim::jit::make_jit();
    io.jit = jit;
  } else if (o.exec != "interp") {
    return run_error("--exec must be interp or jit, not '" + o.exec + "'");
  }

  ProfilerOptions po;
  po.mark_on_alloc = alloc_marks;
  po.mark_on_alloc_mode = io.barrier.mark;  // as the barriers mark (ProfilerOptions)
  po.stale_after_epochs = o.stale_after;
  if (o.stale_bytes != "auto") {
    auto b = sim::parse_size(o.stale_bytes);
    if (!b.ok()) return run_error("--stale-bytes: " + b.error().message);
    po.stale_after_bytes = *b;
  }
  if (o.leak_view != "groups" && o.leak_view != "objects")
    return run_error("--leak-view must be groups or objects, not '" + o.leak_view + "'");
  po.min_tracked_size = o.min_size;
  po.trace_path = o.trace;
  const std::optional<FateReports> fates = fate_reports_from_name(o.fates);
  if (!fates) return run_error(fmt::format("--fates must be {}, not '{}'", kFateReportsChoices, o.fates));
  po.fate_reports = *fates;
  // Paths from roots: the sim walks its heap for the profiler (bound to the heap below).
  sim::SimHeapWalker walker;
  if (!o.no_paths) po.heap_walker = &walker;
  std::vector<const RootPath*> printed;  // each group's path once
  po.on_leak_group = [&](const LeakGroup& g) {
    if (o.quiet) return;
    fmt::print("  [gc {:>3}] {}\n", g.epoch + 1, format_leak_group(g));
    if (g.path && std::find(printed.begin(), printed.end(), g.path) == printed.end()) {
      printed.push_back(g.path);
      fmt::print("            path from a root: {}\n", format_path(*g.path));
    }
  };
  auto created = Profiler::create(std::move(po));
  if (!created.ok()) return run_error(created.error().message);
  Profiler& prof = **created;

  auto heap = sim::Heap::create(ho, &prof);
  if (!heap.ok()) return run_error(heap.error().message);
  sim::Heap& h = **heap;
  walker.set_heap(&h);
  // Unbound before the heap goes: a profiler destroyed on an error path with a lazy sweep's
  // bracket open closes it (gc_end), and must not walk a freed heap then.
  struct Unbind {
    sim::SimHeapWalker& w;
    ~Unbind() { w.set_heap(nullptr); }
  } unbind{walker};
  h.on_gc = [&](const sim::GcInfo& g) {
    if (o.quiet) return;
    const bool show = g.index <= 8 || (g.index & (g.index - 1)) == 0 || g.index % 100 == 0;
    if (!show) return;
    fmt::print("  [gc {:>3}] {}{}: {} live, {} objects freed, {} moved, {:.2f} ms", g.index,
               sim::gc_policy_name(g.policy), g.compacted ? " (compacting)" : "",
               sim::format_bytes(g.live_bytes_after), g.freed_objects, g.moved_objects, g.seconds * 1e3);
    // The mark-sweep space's fragmentation: what is free, and the biggest object that fits.
    if (g.policy != sim::GcPolicy::kSemiSpace)
      fmt::print("; {} free, largest gap {}", sim::format_bytes(g.free_bytes_after),
                 sim::format_bytes(g.largest_free_after));
    fmt::print("\n");
  };
  auto interp = sim::Interpreter::create(wl->module, h, &prof, io);
  if (!interp.ok()) return run_error(interp.error().message);

  fmt::print("objprof run: {} ({}), size {}, seed {}, {} thread{}\n", o.workload, wl->path, io.size, io.seed,
             io.threads, io.threads == 1 ? "" : "s");
  const char* assumed = alloc_marks && root_marks ? " (allocations and GCs' roots mark)"
                        : alloc_marks               ? " (allocations mark)"
                        : root_marks                ? " (GCs' roots mark)"
                                                    : "";
  fmt::print("  heap {} ({}), pass {}{}, barrier {}, GC_K {} epochs, tracking objects >= {} bytes\n",
             sim::format_bytes(h.options().heap_bytes), o.gc, o.pass, assumed, o.barrier, o.stale_after, o.min_size);
  if (io.cache_plan) {
    const sim::CachePlan& plan = *io.cache_plan;
    fmt::print("  cache per site, from a training run at size {}: {} compare, {} store only, {} none of {} kept sites\n",
               sim::training_size(io.size), plan.count(sim::CacheUse::kCompare),
               plan.count(sim::CacheUse::kStore), plan.count(sim::CacheUse::kNone), plan.use.size());
  }
  if (jit) {
    const auto js = jit->stats();
    fmt::print("  exec jit: {} function{} compiled ({} bytes of code), {} interpreted\n", js.compiled,
               js.compiled == 1 ? "" : "s", js.code_bytes, js.interpreted);
    if (o.verbose)
      for (const auto& m : (*interp)->function_modes())
        fmt::print("    {}: {}\n", m.name, m.compiled ? "compiled" : "interpreted (" + m.reason + ")");
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto result = (*interp)->run("main");
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!result.ok()) return run_error(result.error().message);
  if (auto st = prof.finish(); !st.ok()) return run_error("trace: " + st.error().message);

  const ProfilerStats s = prof.stats();
  const sim::HeapStats hs = h.stats();
  const sim::InterpStats is = (*interp)->stats();
  const double pct = s.barriers_executed ? 100.0 * static_cast<double>(s.barrier_cache_hits) / static_cast<double>(s.barriers_executed) : 0.0;
  fmt::print("\nsummary: main returned {} after {:.3f} s\n", *result, secs);
  fmt::print("  GCs: {} ({}{}), {:.3f} s in GC, {} live after the last\n", hs.gcs, trace::gc_kind_name(sim::gc_policy_kind(ho.gc)),
             hs.compactions ? fmt::format(", {} of them compacting", hs.compactions) : "", hs.gc_seconds,
             sim::format_bytes(hs.live_bytes_after_last_gc));
  if (ho.gc == sim::GcPolicy::kLazySweep)
    fmt::print("  lazy sweep: {} steps; {} objects allocated while a sweep was pending, {} of them in swept cells\n",
               hs.sweep_steps, hs.objects_allocated_in_sweep, hs.objects_reused_in_sweep);
  fmt::print("  objects: {} allocated ({}), {} large, {} freed, {} moved; {} tracked by the profiler\n",
             s.objects_allocated, sim::format_bytes(s.bytes_allocated), hs.large_objects_allocated, hs.objects_freed,
             hs.objects_moved, s.objects_tracked);
  if (prof.options().fate_reports != FateReports::kHooks)
    fmt::print("  fates: {} of {} GCs told the profiler their tracked objects' fates (--fates={}), the others "
               "reported each move and free\n",
               s.survivor_gcs, hs.gcs, o.fates);
  fmt::print("  accesses: {} executed by {} instructions{}; the {} pass kept {} of {} access sites, elided {} accesses\n",
             is.accesses, is.instructions, jit ? " (interpreted code only)" : "", o.pass, is.static_kept,
             is.static_sites, is.barriers_elided);
  fmt::print("  barriers: {} executed, {} cache hits ({:.1f}%), {} bits set; {} granules harvested\n", s.barriers_executed,
             s.barrier_cache_hits, pct, s.bitmap_marks, s.bits_harvested);
  if (!o.trace.empty()) fmt::print("  trace: {} ({} bytes, {} chunks)\n", o.trace, s.trace_bytes, s.trace_chunks);
  fmt::print("\n");
  if (o.leak_view == "objects") fmt::print("{}", format_leak_objects(prof.possible_leaks(), 20));
  const std::vector<LeakGroup> groups = prof.possible_leak_groups();
  if (o.leak_view == "groups") fmt::print("{}", format_leak_groups(groups, 20));
  if (!o.leaks_json.empty()) {
    std::ofstream out(o.leaks_json);
    out << leak_groups_json(groups, prof.options(), prof.stats()).dump(2) << '\n';
    if (!out.flush()) return run_error("cannot write " + o.leaks_json);
  }
  return 0;
}

const RegisterCommand kRun([](CLI::App& app) -> std::function<int()> {
  auto opt = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand("run", "Run an IR workload on the simulated runtime with the profiler attached");
  cmd->add_option("workload", opt->workload, "listleak, swapleak, points, scimark, graph, threads, or an .ir file")->required();
  cmd->add_option("--heap", opt->heap, "fixed heap size, e.g. 4M (default: the workload's, else 8M)");
  cmd->add_option("--gc", opt->gc, "semispace (copying), marksweep (non-moving) or lazysweep (marksweep swept in steps between allocations)");
  cmd->add_option("--pass", opt->pass, "barrier elimination: none, paper or global");
  cmd->add_option("--barrier", opt->barrier, "cache-racy, cache-atomic, cache-buffered, nocache-racy, nocache-atomic or nocache-buffered "
                  "(buffered: no mark lost under contention, interpreter only)");
  cmd->add_option("--stale-after", opt->stale_after, "GC_K: epochs without access before a report")->check(CLI::Range(1u, 1000000u));
  cmd->add_option("--min-size", opt->min_size, "track objects of at least this many bytes");
  cmd->add_option("--stale-bytes", opt->stale_bytes,
                  "and idle while its thread allocated this much (e.g. 64K; 0: GC_K alone; auto: the thread's busiest epoch)");
  cmd->add_option("--leak-view", opt->leak_view, "the final report: groups (one per site and type) or objects");
  cmd->add_option("--leaks-json", opt->leaks_json, "also write the final grouped report as JSON to this file");
  cmd->add_option("--trace", opt->trace, "write the binary trace to this file");
  cmd->add_option("--threads", opt->threads, "mutator threads (each runs main)")->check(CLI::Range(1u, 256u));
  cmd->add_option("--size", opt->size, "workload size parameter (default: the workload's)");
  cmd->add_option("--seed", opt->seed, "seed of sys.rand");
  cmd->add_flag("--quiet", opt->quiet, "no progress lines");
  cmd->add_option("--exec", opt->exec, "interp (the IR interpreter) or jit (compiled with asmjit; what it cannot compile is interpreted)");
  cmd->add_flag("--no-paths", opt->no_paths, "do not search paths from GC roots to the leaks (the sim's heap walker)");
  cmd->add_flag("--verbose", opt->verbose, "with --exec=jit: say which functions run compiled, and why the others do not");
  cmd->add_option("--assume", opt->assume,
                  "what the global pass may assume: allocation-marks (the profiler marks each new object, so a fresh "
                  "object's first accesses need no barrier), root-marks (each GC marks what the frames hold, so GC "
                  "points end no availability)")
      ->delimiter(',');
  cmd->add_option("--fates", opt->fates,
                  "how the leak detector learns what each GC did to the objects it tracks: hooks (a hook call per "
                  "moved or dead object), survivors (the collector's answers for the tracked objects alone), or "
                  "cheaper (per GC, whichever costs less); a trace or the hook checks always take the hooks");
  cmd->add_option("--cache", opt->cache,
                  "where the barrier's cache is used: everywhere (every kept site) or profile (per site, from a "
                  "training run at half the size; interpreter and JIT)");
  return [opt] { return run(*opt); };
});

}  // namespace
}  // namespace objprof::cli
