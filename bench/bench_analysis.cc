// Offline analyzer throughput and memory, end to end on an in-memory trace.
//
// The trace comes from the real Profiler driven by a synthetic generational runtime (built once
// per size, untimed): objects of 16..128 bytes are bump-allocated in a 32 MiB nursery by two
// mutator threads, 80% of them touched through the barrier in their first epoch; when the
// nursery is full a copying GC frees 90% of it and moves the rest into an old space, where a
// random 20% are touched every epoch and 4% die at each GC. A 10M-object trace has about 10M
// allocations, 9.4M frees, 1M moves and 8M access bits (~370 MB).
//
// Benchmarks (W: AnalyzerOptions::workers, 1 and 2; oneTBB is capped at W threads too):
//   BM_Analyze/N/W       trace -> Address-Chains (TraceAnalysis): read, CRC, decode, apply
//   BM_Report/N/W        build_report on the analysis (every view, one parallel pass)
//   BM_EndToEnd/N/W      both, what `objprof report` does after reading the file
// Counters: events/s (allocs + moves + frees + access bits, per second of wall time),
// events/cpu_s and cpu_s (process CPU time, both threads: robust on a shared machine),
// objects/s, bytes_per_object (the analyzer's peak data over the object count), trace_MB.
#include "objprof/analysis/analyzer.h"
#include "objprof/analysis/report.h"
#include "objprof/barrier.h"
#include "objprof/profiler.h"

#include <benchmark/benchmark.h>
#include <tbb/global_control.h>

#include <time.h>

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <vector>

namespace {

using namespace objprof;

struct Synthetic {
  std::vector<std::byte> trace;
  std::uint64_t objects = 0;
};

const Synthetic& synthetic(std::uint64_t objects) {
  static std::map<std::uint64_t, std::unique_ptr<Synthetic>> cache;
  auto& slot = cache[objects];
  if (slot) return *slot;
  slot = std::make_unique<Synthetic>();
  constexpr Address kBase = 0x2000'0000'0000ull;
  constexpr std::uint64_t kNursery = 32ull << 20, kOld = 480ull << 20;
  auto sink = std::make_unique<MemorySink>();
  MemorySink* raw = sink.get();
  raw->reserve(objects * 40);
  ProfilerOptions po;
  po.trace_sink = std::move(sink);
  po.min_tracked_size = ~std::uint64_t{0};  // the online tracker is not what is measured here
  po.default_leak_printer = false;
  po.on_leak = {};
  auto prof = std::move(*Profiler::create(std::move(po)));
  // The space is only an address range: the profiler never touches heap memory.
  (void)prof->add_space(*HeapSpace::make(kBase, kBase + kNursery + kOld, 8, "heap"));
  for (std::uint32_t t = 1; t <= 8; ++t) (void)prof->define_type({t, "T" + std::to_string(t), 16 * t, false});
  for (std::uint32_t s = 1; s <= 64; ++s) (void)prof->define_site({s, 0x400000 + 16 * s, "Site.m" + std::to_string(s), s});
  ThreadState* threads[2] = {*prof->attach_thread(0, "main"), *prof->attach_thread(1, "worker")};
  const BarrierDescriptor& desc = prof->barrier_descriptor(0);
  std::mt19937_64 rng(42);
  std::vector<Address> nursery, old_objects, survivors;
  Address bump = kBase, old_bump = kBase + kNursery;
  for (std::uint64_t n = 0; n < objects;) {
    const std::uint64_t size = 16 + 8 * (rng() % 15);
    if (bump + size > kBase + kNursery) {
      // Copying GC of the nursery; old objects die with 4% probability; old space compacts by
      // restarting its bump pointer when full (every survivor is then moved again).
      (void)prof->gc_begin(GcKind::kCopying);
      survivors.clear();
      for (Address a : old_objects)
        if (rng() % 25 == 0) prof->on_free(a);
        else survivors.push_back(a);
      old_objects.swap(survivors);
      for (Address a : nursery) {
        if (rng() % 10 != 0) {
          prof->on_free(a);
          continue;
        }
        if (old_bump + 128 > kBase + kNursery + kOld) old_bump = kBase + kNursery;  // wrap (objects long dead there)
        prof->on_move(a, old_bump);
        old_objects.push_back(old_bump);
        old_bump += 128;
      }
      (void)prof->gc_end();
      nursery.clear();
      bump = kBase;
      for (Address a : old_objects)
        if (rng() % 5 == 0) access<>(*threads[0], desc, a);
    }
    ThreadState& t = *threads[n & 1];
    prof->on_alloc(t, 1 + static_cast<std::uint32_t>(rng() % 64), 1 + static_cast<std::uint32_t>(size / 16 - 1), bump, size);
    if (rng() % 5 != 0) access<>(t, desc, bump);
    nursery.push_back(bump);
    bump += size;
    ++n;
  }
  (void)prof->finish();
  slot->trace = raw->take();
  slot->objects = objects;
  return *slot;
}

// CPU time of the whole process (every thread): on a shared machine the wall clock depends on
// what else runs, the CPU time much less.
double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

void counters(benchmark::State& state, const analysis::TraceAnalysis& a, std::size_t trace_bytes, double cpu_seconds) {
  const auto iters = static_cast<double>(state.iterations());
  state.counters["cpu_s"] = cpu_seconds / iters;  // process CPU per iteration, both threads
  state.counters["events/cpu_s"] = static_cast<double>(a.stats.events()) * iters / cpu_seconds;
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(a.stats.events()) * iters, benchmark::Counter::kIsRate);
  state.counters["objects/s"] = benchmark::Counter(static_cast<double>(a.objects.size()) * iters, benchmark::Counter::kIsRate);
  state.counters["events"] = static_cast<double>(a.stats.events());
  state.counters["bytes_per_object"] = static_cast<double>(a.peak_memory_bytes) / static_cast<double>(a.objects.size());
  state.counters["trace_MB"] = static_cast<double>(trace_bytes) / 1e6;
  state.SetBytesProcessed(static_cast<std::int64_t>(trace_bytes) * state.iterations());
}

// The second argument is AnalyzerOptions::workers, and caps oneTBB (the report's views) at
// as many threads.
analysis::AnalyzerOptions workers_option(const benchmark::State& state) {
  analysis::AnalyzerOptions o;
  o.workers = static_cast<unsigned>(state.range(1));
  return o;
}

void BM_Analyze(benchmark::State& state) {
  const Synthetic& s = synthetic(static_cast<std::uint64_t>(state.range(0)));
  const analysis::AnalyzerOptions options = workers_option(state);
  tbb::global_control cap(tbb::global_control::max_allowed_parallelism, options.workers);
  std::unique_ptr<analysis::TraceAnalysis> last;
  double cpu = 0;
  for (auto _ : state) {
    const double c0 = process_cpu_seconds();
    auto r = analysis::analyze(s.trace, options);
    cpu += process_cpu_seconds() - c0;
    if (!r.ok()) {
      state.SkipWithError(r.error().message.c_str());
      return;
    }
    state.PauseTiming();
    last = std::make_unique<analysis::TraceAnalysis>(std::move(*r));  // freed outside the timing
    state.ResumeTiming();
  }
  counters(state, *last, s.trace.size(), cpu);
}

void BM_Report(benchmark::State& state) {
  const Synthetic& s = synthetic(static_cast<std::uint64_t>(state.range(0)));
  auto a = analysis::analyze(s.trace);
  tbb::global_control cap(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(state.range(1)));
  if (!a.ok()) {
    state.SkipWithError(a.error().message.c_str());
    return;
  }
  double cpu = 0;
  for (auto _ : state) {
    const double c0 = process_cpu_seconds();
    auto r = analysis::build_report(*a, {});
    benchmark::DoNotOptimize(r);
    cpu += process_cpu_seconds() - c0;
  }
  state.counters["cpu_s"] = cpu / static_cast<double>(state.iterations());
  state.counters["objects/s"] = benchmark::Counter(static_cast<double>(a->objects.size()) * static_cast<double>(state.iterations()),
                                                   benchmark::Counter::kIsRate);
}

void BM_EndToEnd(benchmark::State& state) {
  const Synthetic& s = synthetic(static_cast<std::uint64_t>(state.range(0)));
  const analysis::AnalyzerOptions options = workers_option(state);
  tbb::global_control cap(tbb::global_control::max_allowed_parallelism, options.workers);
  std::unique_ptr<analysis::TraceAnalysis> last;
  double cpu = 0;
  for (auto _ : state) {
    const double c0 = process_cpu_seconds();
    auto r = analysis::analyze(s.trace, options);
    if (!r.ok()) {
      state.SkipWithError(r.error().message.c_str());
      return;
    }
    auto report = analysis::build_report(*r, {});
    benchmark::DoNotOptimize(report);
    cpu += process_cpu_seconds() - c0;
    state.PauseTiming();
    last = std::make_unique<analysis::TraceAnalysis>(std::move(*r));
    state.ResumeTiming();
  }
  counters(state, *last, s.trace.size(), cpu);
}

// {objects, workers}: 1 and 2 workers side by side at each size.
void sizes_and_workers(benchmark::internal::Benchmark* b) {
  for (long objects : {1'000'000L, 10'000'000L})
    for (long workers : {1L, 2L}) b->Args({objects, workers});
}
BENCHMARK(BM_Analyze)->Apply(sizes_and_workers)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();
BENCHMARK(BM_Report)->Apply(sizes_and_workers)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();
BENCHMARK(BM_EndToEnd)->Apply(sizes_and_workers)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
