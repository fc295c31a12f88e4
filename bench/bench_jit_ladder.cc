// The paper's Fig. 6 ladder on JIT code (backends/jit): every workload compiled with asmjit and
// run with the barrier at each rung, side by side in one run.
//
//   no-barriers  profiler attached (allocation and GC hooks, bitmap harvest), no barrier emitted
//   none         a barrier at every access site, no cache (pass none)
//   caching      every access site, cache in the ThreadState field
//   elim         the global elimination pass, no cache
//   all          global pass and cache in the thread field (objprof run's default barrier)
//   all-pinned   global pass, cache pinned in a register (the paper's r8), written back at calls
//
// The baseline keeps the profiler so that the ratios are the barriers' cost alone (the
// interpreter ladder, bench_sim_ladder, measures against no profiler at all). One iteration is
// one complete run of `main` (compiled code, runtime calls, GCs and the profiler's hooks);
// setup (profiler, heap, decoding, the pass and compilation) is not timed (manual time). Racy
// marking, no counters, no trace file; semispace heaps at the workloads' `; @heap` defaults.
#include "support/bench_main.h"
#include "support/workloads.h"

#include "backends/jit/jit.h"
#include "sim/heap.h"
#include "sim/interp.h"
#include "sim/workloads.h"

#include <objprof/objprof.h>

#include <chrono>
#include <cstdio>
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
  backends::CacheLocation where = backends::CacheLocation::kThreadField;
};

constexpr Rung kRungs[] = {
    {"no-barriers", false, ir::PassKind::kNone, false},
    {"none", true, ir::PassKind::kNone, false},
    {"caching", true, ir::PassKind::kNone, true},
    {"elim", true, ir::PassKind::kGlobal, false},
    {"all", true, ir::PassKind::kGlobal, true},
    {"all-pinned", true, ir::PassKind::kGlobal, true, backends::CacheLocation::kPinnedRegister},
};

struct WorkloadSetup {
  std::string name;
  std::uint64_t size;
  std::uint32_t threads;
};

const std::vector<WorkloadSetup>& setups() {
  static const std::vector<WorkloadSetup> all = {
      {"listleak", 2000, 1}, {"swapleak", 2000, 1}, {"points", 1000, 1},
      {"scimark", 64, 1},    {"graph", 500, 1},     {"threads", 400, 2},
  };
  return all;
}

void run_rung(benchmark::State& state, const sim::LoadedWorkload* wl, WorkloadSetup setup, Rung rung) {
  if (!backends::jit::jit_supported()) {
    state.SkipWithError("the JIT is unsupported on this arch");
    return;
  }
  auto heap_bytes = sim::parse_size(wl->default_heap.empty() ? "8M" : wl->default_heap);
  if (!heap_bytes.ok()) {
    state.SkipWithError(heap_bytes.error().message.c_str());
    return;
  }
  std::uint64_t gcs = 0;
  for (auto _ : state) {
    ProfilerOptions po;
    po.default_leak_printer = false;
    po.on_leak = {};
    auto profiler = std::move(*Profiler::create(std::move(po)));
    sim::HeapOptions ho;
    ho.heap_bytes = *heap_bytes;
    ho.gc = sim::GcPolicy::kSemiSpace;
    auto heap = sim::Heap::create(ho, profiler.get());
    if (!heap.ok()) {
      state.SkipWithError(heap.error().message.c_str());
      return;
    }
    backends::jit::JitOptions jo;
    jo.barriers = rung.barriers;
    jo.cache = rung.where;
    auto jit = backends::jit::make_jit(jo);
    sim::InterpOptions io;
    io.pass = rung.pass;
    io.barrier = BarrierConfig{rung.cache, MarkMode::kRacy, false};
    io.size = setup.size;
    io.threads = setup.threads;
    io.jit = jit;
    auto interp = sim::Interpreter::create(wl->module, **heap, profiler.get(), io);
    if (!interp.ok()) {
      state.SkipWithError(interp.error().message.c_str());
      return;
    }
    if (jit->stats().interpreted != 0) {
      state.SkipWithError("some functions were not compiled");
      return;
    }
    const auto t0 = std::chrono::steady_clock::now();
    auto result = (*interp)->run("main");
    const auto t1 = std::chrono::steady_clock::now();
    if (!result.ok()) {
      state.SkipWithError(result.error().message.c_str());
      return;
    }
    state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
    gcs += (*heap)->stats().gcs;
  }
  state.counters["gcs"] = static_cast<double>(gcs) / static_cast<double>(state.iterations());
}

void register_all() {
  for (const WorkloadSetup& setup : setups()) {
    const sim::LoadedWorkload* w = bench::load_workload_for("bench_jit_ladder", setup.name);
    if (!w) continue;
    for (const Rung& rung : kRungs) {
      benchmark::RegisterBenchmark(("jit-ladder/" + setup.name + "/" + rung.name).c_str(), run_rung, w, setup, rung)
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  return objprof::bench::run_benchmarks(
      argc, argv, register_all, {{"jit-ladder", "no-barriers", {"none", "caching", "elim", "all", "all-pinned"}}});
}
