// jit_insn_ladder: one rung of the paper's Fig. 6 ladder on JIT code, run once, for counting
// executed instructions under qemu (scripts/jit_insn_ladder.sh; docs/jit.md, "The
// instruction-count ladder"). qemu's timing is not meaningful, so the script counts the
// instructions qemu executes and bins their addresses with the ranges this program writes.
//
//   jit_insn_ladder run WORKLOAD RUNG [--size N] [--threads N] --ranges FILE
//       compiles WORKLOAD with the rung's barrier, runs main once and writes FILE: one line per
//       compiled function ("function BEGIN END NAME") and per emitted barrier sequence
//       ("barrier BEGIN END NAME PC"), addresses as 16 hex digits, [BEGIN, END).
//   jit_insn_ladder stats WORKLOAD [--size N] [--threads N]
//       runs WORKLOAD interpreted (compiled code counts nothing) and prints, per rung, the object
//       accesses and the barriers executed: "RUNG ACCESSES BARRIERS".
//   jit_insn_ladder plan WORKLOAD RUNG [--size N] [--threads N]
//       prints the training profile and the cache plan a planned rung uses at this size, per
//       kept site: "FUNCTION PC OPERAND EXECUTED HITS USE".
//
// Rungs as in bench/bench_jit_ladder.cc: no-barriers (profiler attached, no barrier emitted),
// none (every site, no cache), caching (every site, cache in the thread field), elim (global
// pass, no cache), all-everywhere (global pass, the cache at every kept site), all (global pass,
// the cache where a profile says it pays: sim/cache_plan.h), all-pinned (the same, the cache in
// a register). The plan comes from an interpreted training run of the same workload at half the
// size (a tier-0 profile, not the measured input). The rungs with the pass run it under the
// allocation-marks model (the profiler marks every new object, so a fresh object's first
// accesses need no barrier; InterpOptions::allocation_marks), whose marks the whole-run count
// includes. all-trace is all writing the binary trace to a file: the whole-run count then
// includes the trace writer (compiled code is all's). all-roots is all under the root-marks model
// as well (every GC marks what the frames hold, so GC points end no availability;
// InterpOptions::roots_marked), whose marks the whole-run count includes too.
// Racy marks, no counters, semispace heap at the workload's `; @heap` default, like the bench.
#include "sim/jit/jit.h"
#include "sim/cache_training.h"
#include "sim/heap.h"
#include "sim/interp.h"
#include "sim/workloads.h"

#include <objprof/objprof.h>

#include <fmt/core.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

using namespace objprof;

struct Rung {
  const char* name;
  bool barriers;
  ir::PassKind pass;
  bool cache;
  bool pinned;
  bool planned;  // the cache per site, from a training profile
  bool alloc_marks = false;  // the profiler marks allocations; the pass may assume it
  bool trace = false;        // the binary trace written to a file in /tmp
  bool root_marks = false;   // every GC marks what the frames hold; the pass may assume it
};
const Rung kRungs[] = {
    {"no-barriers", false, ir::PassKind::kNone, false, false, false},
    {"none", true, ir::PassKind::kNone, false, false, false},
    {"caching", true, ir::PassKind::kNone, true, false, false},
    {"elim", true, ir::PassKind::kGlobal, false, false, false, true},
    {"all-everywhere", true, ir::PassKind::kGlobal, true, false, false, true},
    {"all", true, ir::PassKind::kGlobal, true, false, true, true},
    {"all-pinned", true, ir::PassKind::kGlobal, true, true, true, true},
    {"all-trace", true, ir::PassKind::kGlobal, true, false, true, true, true},
    {"all-roots", true, ir::PassKind::kGlobal, true, false, true, true, false, true},
};

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "jit_insn_ladder: %s\n", message.c_str());
  std::exit(2);
}

const Rung& find_rung(const std::string& name) {
  for (const Rung& r : kRungs)
    if (name == r.name) return r;
  std::string known;
  for (const Rung& r : kRungs) known += std::string(known.empty() ? "" : ", ") + r.name;
  die(fmt::format("unknown rung '{}' (one of: {})", name, known));
}

struct Outcome {
  std::int64_t result = 0;
  std::uint64_t gcs = 0;
  sim::InterpStats stats;
  std::vector<std::string> interpreted;  // functions the JIT declined
};

// The measured run of `main` (and, with a trace, its end: the last chunk and the close), a
// function of its own so that callgrind (scripts/jit_insn_ladder.sh, --toggle-collect) counts
// it and not a planned rung's training run.
[[gnu::noinline]] Result<std::int64_t> measured_main(sim::Interpreter& interp, Profiler& prof, bool trace) {
  auto r = interp.run("main");
  if (r.ok() && trace)
    if (Status s = prof.finish(); !s.ok()) return s.error();
  return r;
}

// The semispace heap at the workload's default size; it marks its frames' roots at each GC
// for a rung whose pass assumes it.
sim::HeapOptions heap_options(const sim::LoadedWorkload& wl, const Rung& rung) {
  auto heap_bytes = sim::parse_size(wl.default_heap.empty() ? "8M" : wl.default_heap);
  if (!heap_bytes.ok()) die(heap_bytes.error().message);
  sim::HeapOptions ho;
  ho.heap_bytes = *heap_bytes;
  ho.gc = sim::GcPolicy::kSemiSpace;
  ho.mark_frame_roots = rung.root_marks;
  return ho;
}

// A planned rung's training profile: interpreted, at half the size.
sim::CacheProfile training_profile(const sim::LoadedWorkload& wl, std::uint64_t size, std::uint32_t threads,
                                   const Rung& rung) {
  sim::InterpOptions io;
  io.pass = rung.pass;
  io.allocation_marks = rung.alloc_marks;
  io.roots_marked = rung.root_marks;
  io.size = sim::training_size(size);
  io.threads = threads;
  auto profile = sim::train_cache_profile(wl.module, heap_options(wl, rung), io);
  if (!profile.ok()) die("training run: " + profile.error().message);
  return std::move(*profile);
}

// One run of `main` with the rung's barrier; `code_ranges` non-null: compiled, ranges recorded.
Outcome run_once(const sim::LoadedWorkload& wl, std::uint64_t size, std::uint32_t threads, const Rung& rung,
                 std::vector<sim::jit::CodeRange>* code_ranges) {
  ProfilerOptions po;
  po.default_leak_printer = false;
  po.on_leak = {};
  po.mark_on_alloc = rung.alloc_marks;
  po.mark_on_alloc_mode = MarkMode::kRacy;  // as the barriers below
  const std::string trace_path = rung.trace ? fmt::format("/tmp/jit_insn_ladder-{}.trace", ::getpid()) : "";
  po.trace_path = trace_path;
  auto prof = Profiler::create(std::move(po));
  if (!prof.ok()) die(prof.error().message);
  auto heap = sim::Heap::create(heap_options(wl, rung), prof->get());
  if (!heap.ok()) die(heap.error().message);
  sim::InterpOptions io;
  io.pass = rung.pass;
  io.allocation_marks = rung.alloc_marks;
  io.roots_marked = rung.root_marks;
  io.barrier = BarrierConfig{rung.cache, MarkMode::kRacy, false};
  io.size = size;
  io.threads = threads;
  if (rung.planned)
    io.cache_plan = std::make_shared<sim::CachePlan>(
        sim::plan_cache(training_profile(wl, size, threads, rung), sim::CacheCosts::host(rung.pinned)));
  if (code_ranges) {
    sim::jit::JitOptions jo;
    jo.barriers = rung.barriers;
    jo.cache = rung.pinned ? backends::CacheLocation::kPinnedRegister : backends::CacheLocation::kThreadField;
    jo.code_ranges = code_ranges;
    io.jit = sim::jit::make_jit(jo);
  }
  auto interp = sim::Interpreter::create(wl.module, **heap, prof->get(), io);
  if (!interp.ok()) die(interp.error().message);
  Outcome out;
  for (const auto& mode : (*interp)->function_modes())
    if (!mode.compiled) out.interpreted.push_back(mode.name + ": " + mode.reason);
  auto r = measured_main(**interp, **prof, rung.trace);
  if (!trace_path.empty()) std::remove(trace_path.c_str());
  if (!r.ok()) die(r.error().message);
  out.result = *r;
  out.gcs = (*heap)->stats().gcs;
  out.stats = (*interp)->stats();
  return out;
}

int usage() {
  std::fprintf(stderr,
               "usage: jit_insn_ladder run WORKLOAD RUNG [--size N] [--threads N] --ranges FILE\n"
               "       jit_insn_ladder stats WORKLOAD [--size N] [--threads N]\n"
               "       jit_insn_ladder plan WORKLOAD RUNG [--size N] [--threads N]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return usage();
  const std::string mode = argv[1], workload = argv[2];
  std::string rung_name, ranges_path;
  std::uint64_t size = 0;
  std::uint32_t threads = 1;
  int i = 3;
  if (mode == "run" || mode == "plan") {
    if (argc < 4) return usage();
    rung_name = argv[3];
    i = 4;
  } else if (mode != "stats") {
    return usage();
  }
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--size" && i + 1 < argc) {
      char* end = nullptr;
      size = std::strtoull(argv[++i], &end, 10);
      if (*end != '\0' || size == 0) die(fmt::format("--size wants a positive integer, got '{}'", argv[i]));
    } else if (a == "--threads" && i + 1 < argc) {
      char* end = nullptr;
      const unsigned long n = std::strtoul(argv[++i], &end, 10);
      if (*end != '\0' || n == 0 || n > 64) die(fmt::format("--threads wants 1..64, got '{}'", argv[i]));
      threads = static_cast<std::uint32_t>(n);
    } else if (a == "--ranges" && i + 1 < argc) {
      ranges_path = argv[++i];
    } else {
      die(fmt::format("unexpected argument '{}'", a));
    }
  }
  auto wl = sim::load_workload(workload);
  if (!wl.ok()) die(wl.error().message);
  if (size == 0) size = wl->default_size;
  if (size == 0) die("--size is required: the workload declares no default");

  if (mode == "plan") {
    // The training profile and the plan a planned rung would use for this size, per site.
    const Rung& rung = find_rung(rung_name);
    const sim::CacheProfile training = training_profile(*wl, size, threads, rung);
    const sim::CachePlan plan = sim::plan_cache(training, sim::CacheCosts::host(rung.pinned));
    std::printf("# fn pc operand executed hits use (model cost: none %.0f, compare everywhere %.0f, plan %.0f)\n",
                plan.cost_none, plan.cost_all_compare, plan.cost_plan);
    for (std::size_t i = 0; i < plan.sites.size(); ++i)
      std::printf("%s %u %u %llu %llu %s\n", wl->module.functions[plan.sites[i].fn].name.c_str(), plan.sites[i].pc,
                  plan.sites[i].operand, static_cast<unsigned long long>(training.executed[i]),
                  static_cast<unsigned long long>(training.hits[i]), sim::cache_use_name(plan.use[i]));
    return 0;
  }
  if (mode == "stats") {
    for (const Rung& rung : kRungs) {
      const Outcome o = run_once(*wl, size, threads, rung, nullptr);
      std::printf("%s %llu %llu\n", rung.name, static_cast<unsigned long long>(o.stats.accesses),
                  static_cast<unsigned long long>(rung.barriers ? o.stats.barriers_executed : 0));
    }
    return 0;
  }

  const Rung& rung = find_rung(rung_name);
  if (ranges_path.empty()) die("run needs --ranges FILE");
  if (!sim::jit::jit_supported()) die("the JIT is unsupported on this arch");
  std::vector<sim::jit::CodeRange> ranges;
  const Outcome o = run_once(*wl, size, threads, rung, &ranges);
  // A function left to the interpreter would count as "other": the ladder measures compiled code.
  if (!o.interpreted.empty()) die("not every function was compiled: " + o.interpreted.front());
  std::FILE* f = std::fopen(ranges_path.c_str(), "w");
  if (!f) die(fmt::format("cannot write {}: {}", ranges_path, std::strerror(errno)));
  for (const auto& r : ranges) {
    if (r.kind == sim::jit::CodeRange::Kind::kFunction)
      std::fprintf(f, "function %016llx %016llx %s\n", static_cast<unsigned long long>(r.begin),
                   static_cast<unsigned long long>(r.end), r.function.c_str());
    else
      std::fprintf(f, "barrier %016llx %016llx %s %u\n", static_cast<unsigned long long>(r.begin),
                   static_cast<unsigned long long>(r.end), r.function.c_str(), r.pc);
  }
  if (std::fclose(f) != 0) die(fmt::format("cannot write {}", ranges_path));
  std::printf("%s %s size %llu result %lld gcs %llu\n", workload.c_str(), rung.name,
              static_cast<unsigned long long>(size), static_cast<long long>(o.result),
              static_cast<unsigned long long>(o.gcs));
  return 0;
}
