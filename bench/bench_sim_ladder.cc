// The paper's Fig. 6 ladder on the simulated runtime, interpreter mode: every workload run
// without objprof and with the barrier at each rung, side by side in one run.
//
//   no-barriers  no profiler at all: no barrier, no hooks (the baseline)
//   none         profiler on, a barrier at every access site, no cache (pass none)
//   caching      every access site, with the last-accessed-object cache
//   elim         the global elimination pass, no cache
//   all          global pass and cache (what objprof run uses by default)
//
// One iteration is one complete run of the workload's `main` (interpreter, GCs and the
// profiler's hooks); setup (profiler, heap mmap, decoding and the elimination pass) is not
// timed. The time is the process CPU time the run consumed (manual time), not wall time, so
// that a shared, loaded machine does not add its preemptions to one rung and not another. Racy marking, no counters, no trace file: the rungs differ only in the
// barrier. Sizes are the workloads' defaults scaled down so one run takes tens of ms; heaps are
// the workloads' `; @heap` defaults, small as the paper's minimum heaps, so GCs are frequent.
//
// After the runs a table prints each rung's time relative to no-barriers, and the geomean.
#include "support/bench_main.h"
#include "support/workloads.h"
#include "support/cpu_time.h"

#include "sim/heap.h"
#include "sim/interp.h"
#include "sim/workloads.h"

#include <objprof/objprof.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace {

using namespace objprof;

struct Rung {
  const char* name;
  bool profiler;
  ir::PassKind pass;
  bool cache;
};

constexpr Rung kRungs[] = {
    {"no-barriers", false, ir::PassKind::kNone, false},
    {"none", true, ir::PassKind::kNone, false},
    {"caching", true, ir::PassKind::kNone, true},
    {"elim", true, ir::PassKind::kGlobal, false},
    {"all", true, ir::PassKind::kGlobal, true},
};

struct WorkloadSetup {
  std::string name;
  std::uint64_t size;
  std::uint32_t threads;
};

// Default sizes divided so that one run is short; threads runs two mutators.
const std::vector<WorkloadSetup>& setups() {
  static const std::vector<WorkloadSetup> all = {
      {"listleak", 1000, 1}, {"swapleak", 1000, 1}, {"points", 300, 1},
      {"scimark", 48, 1},    {"graph", 300, 1},     {"threads", 200, 2},
  };
  return all;
}

void run_rung(benchmark::State& state, const sim::LoadedWorkload* wl, WorkloadSetup setup, Rung rung) {
  auto heap_bytes = sim::parse_size(wl->default_heap.empty() ? "8M" : wl->default_heap);
  if (!heap_bytes.ok()) {
    state.SkipWithError(heap_bytes.error().message.c_str());
    return;
  }
  std::uint64_t gcs = 0, accesses = 0, barriers = 0;
  for (auto _ : state) {
    std::unique_ptr<Profiler> profiler;
    if (rung.profiler) {
      ProfilerOptions po;
      po.default_leak_printer = false;
      po.on_leak = {};
      profiler = std::move(*Profiler::create(std::move(po)));
    }
    sim::HeapOptions ho;
    ho.heap_bytes = *heap_bytes;
    ho.gc = sim::GcPolicy::kSemiSpace;
    auto heap = sim::Heap::create(ho, profiler.get());
    if (!heap.ok()) {
      state.SkipWithError(heap.error().message.c_str());
      return;
    }
    sim::InterpOptions io;
    io.pass = rung.pass;
    io.barrier = BarrierConfig{rung.cache, MarkMode::kRacy, false};
    io.size = setup.size;
    io.threads = setup.threads;
    auto interp = sim::Interpreter::create(wl->module, **heap, profiler.get(), io);
    if (!interp.ok()) {
      state.SkipWithError(interp.error().message.c_str());
      return;
    }
    const double t0 = bench::process_cpu_seconds();
    auto result = (*interp)->run("main");
    const double t1 = bench::process_cpu_seconds();
    if (!result.ok()) {
      state.SkipWithError(result.error().message.c_str());
      return;
    }
    state.SetIterationTime(t1 - t0);
    gcs += (*heap)->stats().gcs;
    const sim::InterpStats s = (*interp)->stats();
    accesses += s.accesses;
    barriers += s.barriers_executed;
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["gcs"] = static_cast<double>(gcs) / n;
  state.counters["accesses"] = static_cast<double>(accesses) / n;
  state.counters["barriers"] = static_cast<double>(barriers) / n;
}

void register_all() {
  for (const WorkloadSetup& setup : setups()) {
    const sim::LoadedWorkload* w = bench::load_workload_for("bench_sim_ladder", setup.name);
    if (!w) continue;
    for (const Rung& rung : kRungs) {
      benchmark::RegisterBenchmark(("ladder/" + setup.name + "/" + rung.name).c_str(), run_rung, w, setup, rung)
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  return objprof::bench::run_benchmarks(argc, argv, register_all,
                                        {{"ladder", "no-barriers", {"none", "caching", "elim", "all"}}});
}
