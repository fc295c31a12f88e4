// One rung of the paper's Fig. 6 ladder on the simulated runtime, shared by the interpreter
// ladder (bench_sim_ladder) and the JIT ladder (bench_jit_ladder): a fresh profiler, heap and
// interpreter per iteration, one complete run of `main` timed, setup not. The heap is
// pretouched and one untimed run comes first, so no timed run takes page faults (with
// support/steady_memory.h in the benchmark's main; docs/results.md, issue 13 "Part 5").
//
// The time is the process CPU time the run consumed (manual time), not wall time, so that a
// shared, loaded machine does not add its preemptions to one rung and not another. Each rung
// also reports the minimum over repetitions ("min"), which the ladders' ratio tables compare:
// on a VM even CPU time varies by 10-25 % between identical runs, and that noise only adds. Racy
// marking, no counters, no trace file unless the rung says so (LadderRung::trace): the other
// rungs differ only in the barrier. Semispace heaps at
// the workloads' `; @heap` defaults (small, like the paper's minimum heaps), so GCs are frequent.
#pragma once

#include "cpu_time.h"
#include "perf_counters.h"
#include "workloads.h"

#include "sim/cache_training.h"
#include "sim/heap.h"
#include "sim/interp.h"
#include "sim/workloads.h"

#include <objprof/objprof.h>

#include <benchmark/benchmark.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace objprof::bench {

struct LadderRung {
  const char* name;
  bool profiler;  // false: no profiler at all (no barrier, no hooks)
  bool barriers;  // with a profiler: emit/run barriers at the sites the pass keeps
  ir::PassKind pass;
  bool cache;
  bool pinned_cache = false;  // JIT only: the cache in a register instead of the thread field
  MarkMode mark = MarkMode::kRacy;  // interpreter only for kBuffered (the JIT emits racy/atomic)
  bool alloc_marks = false;  // the profiler marks allocations and the pass assumes it
  bool planned = false;      // the cache per site, from a training run at half the size (sim/cache_plan.h)
  bool trace = false;        // write the binary trace to a file (timed: the writer runs in the hooks)
};

struct LadderWorkload {
  std::string name;
  std::uint64_t size;
  std::uint32_t threads;
};

// Makes the code generator of a rung (null: interpret). Every function must compile, or the
// benchmark is skipped with an error: a mixed-mode run would not measure compiled code.
using MakeGenerator = std::shared_ptr<sim::CodeGenerator> (*)(const LadderRung& rung);

// A trace file of this process in the temporary directory (overwritten by each iteration).
inline std::string temp_trace_path() {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir && *dir ? dir : "/tmp") + "/objprof-ladder-" + std::to_string(::getpid()) + ".trace";
}

inline void run_ladder_rung(benchmark::State& state, const sim::LoadedWorkload* wl, const LadderWorkload& setup,
                            const LadderRung& rung, MakeGenerator make_generator) {
  auto heap_bytes = sim::parse_size(wl->default_heap.empty() ? "8M" : wl->default_heap);
  if (!heap_bytes.ok()) {
    state.SkipWithError(heap_bytes.error().message.c_str());
    return;
  }
  std::uint64_t gcs = 0, accesses = 0, barriers = 0;
  bool compiled = false;
  // Events beside time (perf_counters.h): identical work should count identical instructions;
  // page faults and context switches say where a slow repetition waited.
  static const PerfCounters perf;
  perf.report_unavailable_once();
  PerfCounters::Counts events{};
  std::shared_ptr<const sim::CachePlan> plan;
  if (rung.planned) {
    // A tier-0 training run, interpreted, at half the size; not timed.
    sim::HeapOptions ho;
    ho.heap_bytes = *heap_bytes;
    sim::InterpOptions io;
    io.pass = rung.pass;
    io.allocation_marks = rung.alloc_marks;
    io.size = sim::training_size(setup.size);
    io.threads = setup.threads;
    auto profile = sim::train_cache_profile(wl->module, ho, io);
    if (!profile.ok()) {
      state.SkipWithError(("training run: " + profile.error().message).c_str());
      return;
    }
    plan = std::make_shared<const sim::CachePlan>(sim::plan_cache(*profile, sim::CacheCosts::host(rung.pinned_cache)));
  }
  const std::string trace_path = rung.trace ? temp_trace_path() : std::string();
  // One complete run: set-up untimed, then `main` (and the trace's end) timed. Returns false
  // after SkipWithError.
  struct Run {
    double seconds = 0;
    PerfCounters::Counts events{};
    std::uint64_t gcs = 0, accesses = 0, barriers = 0;
  };
  auto run_once = [&](Run& out) -> bool {
    std::unique_ptr<Profiler> profiler;
    if (rung.profiler) {
      ProfilerOptions po;
      po.default_leak_printer = false;
      po.on_leak = {};
      po.mark_on_alloc = rung.alloc_marks;
      // As the rung's barriers mark: the default's locked instruction per allocation made
      // `elim` 4 % slower than `none` on listleak, where they run the same instructions.
      po.mark_on_alloc_mode = rung.mark;
      po.trace_path = trace_path;
      profiler = std::move(*Profiler::create(std::move(po)));
    }
    sim::HeapOptions ho;
    ho.heap_bytes = *heap_bytes;
    ho.gc = sim::GcPolicy::kSemiSpace;
    ho.pretouch = true;  // the heap's page faults belong to set-up (sim/heap.h)
    auto heap = sim::Heap::create(ho, profiler.get());
    if (!heap.ok()) {
      state.SkipWithError(heap.error().message.c_str());
      return false;
    }
    sim::InterpOptions io;
    io.pass = rung.pass;
    io.allocation_marks = rung.alloc_marks;
    io.cache_plan = plan;
    io.barrier = BarrierConfig{rung.cache, rung.mark, false};
    io.size = setup.size;
    io.threads = setup.threads;
    if (make_generator) io.jit = make_generator(rung);
    compiled = io.jit != nullptr;
    auto interp = sim::Interpreter::create(wl->module, **heap, profiler.get(), io);
    if (!interp.ok()) {
      state.SkipWithError(interp.error().message.c_str());
      return false;
    }
    if (compiled)
      for (const auto& mode : (*interp)->function_modes())
        if (!mode.compiled) {
          state.SkipWithError((mode.name + " was not compiled: " + mode.reason).c_str());
          return false;
        }
    const PerfCounters::Counts c0 = perf.read();
    const double t0 = process_cpu_seconds();
    auto result = (*interp)->run("main");
    // The trace's end (last chunk, close) is part of the run's cost.
    const Status finished = profiler && rung.trace ? profiler->finish() : Status::Ok();
    const double t1 = process_cpu_seconds();
    const PerfCounters::Counts c1 = perf.read();
    if (!result.ok() || !finished.ok()) {
      state.SkipWithError((result.ok() ? finished.error().message : result.error().message).c_str());
      return false;
    }
    out.seconds = t1 - t0;
    for (int e = 0; e < PerfCounters::kEvents; ++e) out.events[e] = c1[e] - c0[e];
    out.gcs = (*heap)->stats().gcs;
    const sim::InterpStats s = (*interp)->stats();
    out.accesses = s.accesses;
    out.barriers = s.barriers_executed;
    return true;
  };
  // One untimed run first: the process's first run of a rung meets memory the allocator has
  // never handed out (page faults inside the timed part) and cold code; the timed runs then
  // start from the same state, whichever rung ran before (docs/results.md, "Part 5").
  Run warm_up;
  if (!run_once(warm_up)) return;
  for (auto _ : state) {
    Run r;
    if (!run_once(r)) return;
    state.SetIterationTime(r.seconds);
    for (int e = 0; e < PerfCounters::kEvents; ++e) events[e] += r.events[e];
    gcs += r.gcs;
    accesses += r.accesses;
    barriers += r.barriers;
  }
  if (!trace_path.empty()) std::remove(trace_path.c_str());
  const double n = static_cast<double>(state.iterations());
  state.counters["gcs"] = static_cast<double>(gcs) / n;
  for (int e = 0; e < PerfCounters::kEvents; ++e)
    if (perf.available(static_cast<PerfCounters::Event>(e)))
      state.counters[PerfCounters::name(static_cast<PerfCounters::Event>(e))] = static_cast<double>(events[e]) / n;
  if (!compiled) {  // compiled code counts no accesses (docs/jit.md, "Statistics")
    state.counters["accesses"] = static_cast<double>(accesses) / n;
    state.counters["barriers"] = static_cast<double>(barriers) / n;
  }
}

// Registers PREFIX/WORKLOAD/RUNG for every workload that loads, in table order.
inline void register_ladder(const char* bench_name, const std::string& prefix, const std::vector<LadderWorkload>& workloads,
                            const std::vector<LadderRung>& rungs, MakeGenerator make_generator) {
  for (const LadderWorkload& setup : workloads) {
    const sim::LoadedWorkload* wl = load_workload_for(bench_name, setup.name);
    if (!wl) continue;
    for (const LadderRung& rung : rungs)
      benchmark::RegisterBenchmark((prefix + "/" + setup.name + "/" + rung.name).c_str(), run_ladder_rung, wl, setup,
                                   rung, make_generator)
          ->UseManualTime()
          ->ComputeStatistics("min", [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); })
          ->Unit(benchmark::kMillisecond);
  }
}

}  // namespace objprof::bench
