// The paper's Fig. 6 ladder on JIT code (backends/jit): every workload compiled with asmjit and
// run with the barrier at each rung, side by side in one run.
//
//   no-barriers  profiler attached (allocation and GC hooks, bitmap harvest), no barrier emitted
//   none         a barrier at every access site, no cache (pass none)
//   caching      every access site, cache in the ThreadState field
//   elim         the global elimination pass (allocations mark their objects), no cache
//   all-everywhere  global pass and the cache in the thread field at every kept site
//   all          global pass and the cache where a training run at half the size says it pays
//                (sim/cache_plan.h; docs/jit.md, "The cache per site")
//   all-pinned   the same, cache pinned in a register (the paper's r8), written back at calls
//   all-trace    all, writing the binary trace to a file (issue 13: the whole cost)
//
// The baseline keeps the profiler so that the ratios are the barriers' cost alone (the
// interpreter ladder, bench_sim_ladder, measures against no profiler at all). One iteration is
// one complete run of `main` (compiled code, runtime calls, GCs and the profiler's hooks),
// timed in process CPU time (support/ladder.h); setup, including compilation, is not timed.
#include "support/bench_main.h"
#include "support/steady_memory.h"
#include "support/ladder.h"

#include "sim/jit/jit.h"

#include <cstdio>
#include <memory>
#include <vector>

namespace {

using objprof::bench::LadderRung;
using objprof::ir::PassKind;

const std::vector<LadderRung> kRungs = {
    {"no-barriers", true, false, PassKind::kNone, false},
    {"none", true, true, PassKind::kNone, false},
    {"caching", true, true, PassKind::kNone, true},
    // name, profiler, barriers, pass, cache, pinned, mark, alloc marks, planned, trace
    {"elim", true, true, PassKind::kGlobal, false, false, objprof::MarkMode::kRacy, true},
    {"all-everywhere", true, true, PassKind::kGlobal, true, false, objprof::MarkMode::kRacy, true},
    {"all", true, true, PassKind::kGlobal, true, false, objprof::MarkMode::kRacy, true, true},
    {"all-pinned", true, true, PassKind::kGlobal, true, true, objprof::MarkMode::kRacy, true, true},
    {"all-trace", true, true, PassKind::kGlobal, true, false, objprof::MarkMode::kRacy, true, true, true},
};

const std::vector<objprof::bench::LadderWorkload> kWorkloads = {
    {"listleak", 2000, 1}, {"swapleak", 2000, 1}, {"points", 1000, 1},
    {"scimark", 64, 1},    {"graph", 500, 1},     {"threads", 400, 2},
};

std::shared_ptr<objprof::sim::CodeGenerator> make_generator(const LadderRung& rung) {
  objprof::sim::jit::JitOptions jo;
  jo.barriers = rung.barriers;
  jo.cache = rung.pinned_cache ? objprof::backends::CacheLocation::kPinnedRegister
                               : objprof::backends::CacheLocation::kThreadField;
  return objprof::sim::jit::make_jit(jo);
}

void register_all() {
  if (!objprof::sim::jit::jit_supported()) {
    std::fprintf(stderr, "bench_jit_ladder: the JIT is unsupported on this arch; nothing to run\n");
    return;
  }
  objprof::bench::register_ladder("bench_jit_ladder", "jit-ladder", kWorkloads, kRungs, make_generator);
}

}  // namespace

int main(int argc, char** argv) {
  objprof::bench::keep_freed_memory_mapped();  // support/steady_memory.h
  return objprof::bench::run_benchmarks(
      argc, argv, register_all, {{"jit-ladder", "no-barriers", {"none", "caching", "elim", "all-everywhere", "all", "all-pinned", "all-trace"}, false,
                                          "process CPU", "min"}});
}
