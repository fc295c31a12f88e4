// What objprof costs the simulated runtime's collectors and allocator, side by side in one run.
//
//   gc/<workload>-<collector>/{off,on,trace}
//       Total GC time of one run of the workload: the collecting thread's CPU time around each
//       collection (HeapStats::gc_cpu_seconds; CPU time because the machine may be shared),
//       which includes the profiler's gc_begin harvest, on_move/on_free hooks and gc_end:
//       off = no profiler; on = profiler with the stale tracker, no trace; trace = the same
//       plus the binary trace encoded into a counting sink (every byte produced and CRC'd,
//       none written to disk). Target (issue 4): on and trace within +20% of off.
//   alloc/<collector>/{off,on}
//       Allocation throughput (objects/s) of a mutator allocating 32-byte objects and keeping
//       one in 16 alive in a ring of roots: bump allocation in the semispace, free-list
//       allocation in the mark-sweep space, GCs included; on = Profiler::on_alloc per object.
//       Compared on process CPU time. lazysweep: the mark-sweep space swept in steps inside
//       the allocations (its GC time counts the mark and every step, each step timed).
//   mark/<live>/{serial,parallel-1,parallel-2}
//       The mark of a full mark-sweep collection (GcInfo::mark_seconds, the manual time; the
//       whole collection with its sequential sweep is the gc_ms counter) of a heap holding a
//       live random graph, marked on one thread or with oneTBB (HeapOptions::
//       parallel_mark_min_heap) capped at 1 or 2 threads.
#include "support/bench_main.h"
#include "support/steady_memory.h"
#include "support/workloads.h"

#include "sim/heap.h"
#include "sim/interp.h"
#include "sim/workloads.h"

#include <objprof/objprof.h>

#include <tbb/global_control.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace {

using namespace objprof;

// kSurvivors and kCheaper: kOn with FateReports::kSurvivors (the collector reports no move or
// free and answers report_survivors for every tracked object, every GC) and kCheaper (per GC,
// whichever the profiler expects to cost less).
enum class Profiling { kOff, kOn, kTrace, kSurvivors, kCheaper };

std::unique_ptr<Profiler> make_profiler(Profiling p) {
  if (p == Profiling::kOff) return nullptr;
  ProfilerOptions po;
  po.default_leak_printer = false;
  po.on_leak = {};
  if (p == Profiling::kTrace) po.trace_sink = std::make_unique<CountingSink>();
  if (p == Profiling::kSurvivors) po.fate_reports = FateReports::kSurvivors;
  if (p == Profiling::kCheaper) po.fate_reports = FateReports::kCheaper;
  return std::move(*Profiler::create(std::move(po)));
}

// One run of the workload: its collections' CPU time and count, or an error.
struct GcRun {
  double seconds = 0;
  std::uint64_t gcs = 0;
  std::string error;
};

GcRun one_gc_run(const sim::LoadedWorkload* wl, sim::GcPolicy gc, Profiling p) {
  GcRun out;
  auto heap_bytes = sim::parse_size(wl->default_heap.empty() ? "8M" : wl->default_heap);
  if (!heap_bytes.ok()) {
    out.error = heap_bytes.error().message;
    return out;
  }
  auto profiler = make_profiler(p);
  sim::HeapOptions ho;
  ho.heap_bytes = *heap_bytes;
  ho.gc = gc;
  ho.pretouch = true;  // the heap's page faults belong to set-up, not to the first GCs (sim/heap.h)
  auto heap = sim::Heap::create(ho, profiler.get());
  if (!heap.ok()) {
    out.error = heap.error().message;
    return out;
  }
  sim::InterpOptions io;
  io.pass = ir::PassKind::kGlobal;
  io.barrier = BarrierConfig{true, MarkMode::kRacy, false};
  io.size = wl->default_size;
  auto interp = sim::Interpreter::create(wl->module, **heap, profiler.get(), io);
  if (!interp.ok()) {
    out.error = interp.error().message;
    return out;
  }
  auto r = (*interp)->run("main");
  if (!r.ok()) {
    out.error = r.error().message;
    return out;
  }
  if (profiler && !profiler->finish().ok()) {
    out.error = "finish failed";
    return out;
  }
  const sim::HeapStats s = (*heap)->stats();
  out.seconds = s.gc_cpu_seconds;
  out.gcs = s.gcs;
  return out;
}

void gc_time(benchmark::State& state, const sim::LoadedWorkload* wl, sim::GcPolicy gc, Profiling p) {
  // One untimed run first, so that no timed run is the process's first with this pair: that one
  // meets memory the allocator never handed out and cold code (docs/results.md, "Part 5").
  if (const GcRun warm_up = one_gc_run(wl, gc, p); !warm_up.error.empty()) {
    state.SkipWithError(warm_up.error.c_str());
    return;
  }
  std::uint64_t gcs = 0;
  for (auto _ : state) {
    const GcRun r = one_gc_run(wl, gc, p);
    if (!r.error.empty()) {
      state.SkipWithError(r.error.c_str());
      return;
    }
    state.SetIterationTime(r.seconds);
    gcs += r.gcs;
  }
  state.counters["gcs"] = static_cast<double>(gcs) / static_cast<double>(state.iterations());
}

// Runs per repetition: enough for at least kGcsPerRepetition collections (a workload with two
// GCs of 5-10 us each gives a number dominated by timer and interrupt noise otherwise), at
// least 8. Counted on one untimed run without the profiler: the collections a run makes do not
// depend on the machine, so neither do the iteration counts.
// OBJPROF_BENCH_GC_RUNS=N fixes the runs instead, with no calibration run: for counting
// instructions (scripts/sim_gc_cost.sh), where one run is as good as many.
constexpr std::uint64_t kGcsPerRepetition = 64;
std::int64_t runs_per_repetition(const sim::LoadedWorkload* wl, sim::GcPolicy gc) {
  if (const char* fixed = std::getenv("OBJPROF_BENCH_GC_RUNS"); fixed != nullptr && std::atoi(fixed) > 0)
    return std::atoi(fixed);
  const GcRun r = one_gc_run(wl, gc, Profiling::kOff);
  const std::uint64_t gcs = std::max<std::uint64_t>(r.gcs, 1);
  return static_cast<std::int64_t>(std::clamp<std::uint64_t>((kGcsPerRepetition + gcs - 1) / gcs, 8, 256));
}

struct Ring final : sim::RootProvider {
  std::vector<std::uint64_t> slots = std::vector<std::uint64_t>(4096, 0);
  void visit_roots(const sim::RootFn& fn) override {
    for (auto& s : slots)
      if (s) fn(s);
  }
};

sim::SimType node_type() {
  sim::SimType t;
  t.name = "Node";
  t.field_names = {"next", "other", "value"};
  t.slot_is_ref = {1, 1, 0};
  return t;
}

void alloc_rate(benchmark::State& state, sim::GcPolicy gc, Profiling p) {
  auto profiler = make_profiler(p);
  sim::HeapOptions ho;
  ho.heap_bytes = 4 << 20;
  ho.gc = gc;
  auto heap = sim::Heap::create(ho, profiler.get());
  sim::Heap& h = **heap;
  const std::uint32_t type = *h.add_type(node_type());
  ThreadState* ts = nullptr;
  if (profiler) {
    (void)profiler->define_site({1, 0, "alloc_rate", 0});
    ts = *profiler->attach_thread(1, "alloc");
  }
  Ring ring;
  sim::Mutator m{&ring, ts};
  h.attach_mutator(&m);
  std::uint64_t n = 0;
  for (auto _ : state) {
    for (int i = 0; i < 1024; ++i, ++n) {
      auto a = h.allocate(m, 1, type);
      if (!a.ok()) {
        state.SkipWithError(a.error().message.c_str());
        h.detach_mutator(&m);
        return;
      }
      if ((n & 15) == 0) ring.slots[(n >> 4) % ring.slots.size()] = *a;
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(n));
  state.counters["gcs"] = static_cast<double>(h.stats().gcs);
  h.detach_mutator(&m);
  if (ts) profiler->detach_thread(*ts);
}

// threads: 0 = the serial marker; otherwise oneTBB capped at that many threads.
void mark_time(benchmark::State& state, std::uint64_t live_objects, int threads) {
  sim::HeapOptions ho;
  ho.heap_bytes = 256ull << 20;
  ho.gc = sim::GcPolicy::kMarkSweep;
  ho.parallel_mark_min_heap = threads > 0 ? 0 : ~0ull;
  tbb::global_control cap(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(std::max(threads, 1)));
  double gc_seconds = 0;
  std::uint64_t collections = 0;
  auto heap = sim::Heap::create(ho, nullptr);
  sim::Heap& h = **heap;
  h.on_gc = [&](const sim::GcInfo& info) {
    state.SetIterationTime(info.mark_seconds);
    gc_seconds += info.seconds;
    ++collections;
  };
  const std::uint32_t type = *h.add_type(node_type());
  Ring ring;
  sim::Mutator m{&ring, nullptr};
  h.attach_mutator(&m);
  // A random graph: every node points at the previous one and at a random earlier node, and a
  // few roots hold entry points, so marking sees long chains and sharing.
  std::uint64_t rng = 0x9e3779b97f4a7c15ull;
  std::vector<std::uint64_t>& roots = ring.slots;
  Address prev = 0;
  std::vector<Address> sample;
  for (std::uint64_t i = 0; i < live_objects; ++i) {
    auto a = h.allocate(m, 1, type);
    if (!a.ok()) {
      state.SkipWithError(a.error().message.c_str());
      h.detach_mutator(&m);
      return;
    }
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    sim::Heap::store(*a, 0, prev);
    if (!sample.empty()) sim::Heap::store(*a, 1, sample[rng % sample.size()]);
    if ((i & 1023) == 0) sample.push_back(*a);
    prev = *a;
    if ((i & 4095) == 0) roots[(i >> 12) % roots.size()] = *a;
  }
  roots[roots.size() - 1] = prev;
  collections = 0;
  gc_seconds = 0;
  for (auto _ : state) {
    if (!h.collect(m).ok()) state.SkipWithError("collect failed");
  }
  state.counters["objects"] = static_cast<double>(live_objects);
  if (collections > 0) state.counters["gc_ms"] = 1e3 * gc_seconds / static_cast<double>(collections);
  h.detach_mutator(&m);
}

void register_all() {
  const std::pair<const char*, Profiling> modes[] = {{"off", Profiling::kOff}, {"on", Profiling::kOn}, {"trace", Profiling::kTrace},
                                                       {"survivors", Profiling::kSurvivors}, {"cheaper", Profiling::kCheaper}};
  const std::pair<const char*, sim::GcPolicy> gcs[] = {{"semispace", sim::GcPolicy::kSemiSpace},
                                                      {"marksweep", sim::GcPolicy::kMarkSweep},
                                                      {"lazysweep", sim::GcPolicy::kLazySweep}};
  for (const char* name : {"listleak", "points", "graph", "scimark"}) {
    const sim::LoadedWorkload* wl = bench::load_workload_for("bench_sim_gc", name);
    if (!wl) continue;
    for (const auto& [gc_name, gc] : gcs) {
      const std::int64_t runs = runs_per_repetition(wl, gc);
      for (const auto& [mode, p] : modes)
        benchmark::RegisterBenchmark((std::string("gc/") + name + "-" + gc_name + "/" + mode).c_str(), gc_time,
                                     wl, gc, p)
            ->UseManualTime()
            ->Iterations(runs)  // the timed part (GC) is a small share of each run: fix the runs
            ->Unit(benchmark::kMillisecond);
    }
  }
  for (const auto& [gc_name, gc] : gcs)
    for (const auto& [mode, p] : modes)
      if (p == Profiling::kOff || p == Profiling::kOn)
        benchmark::RegisterBenchmark((std::string("alloc/") + gc_name + "/" + mode).c_str(), alloc_rate, gc, p)
            ->MeasureProcessCPUTime();
  for (std::uint64_t live : {std::uint64_t{1} << 18, std::uint64_t{1} << 21})
    for (int threads : {0, 1, 2})
      benchmark::RegisterBenchmark(
          ("mark/" + std::to_string(live) + "/" + (threads == 0 ? std::string("serial") : "parallel-" + std::to_string(threads))).c_str(),
          mark_time, live, threads)
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond);
}

}  // namespace

int main(int argc, char** argv) {
  objprof::bench::keep_freed_memory_mapped();  // support/steady_memory.h
  return objprof::bench::run_benchmarks(argc, argv, register_all,
                                        {{"gc", "off", {"on", "trace", "survivors", "cheaper"}},
                                         {"alloc", "off", {"on"}, true},
                                         {"mark", "serial", {"parallel"}}});
}
