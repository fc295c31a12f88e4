// Pass throughput on generated CFGs from 100 to 100k blocks: analyses (CFG, dominators,
// frontiers, SSA) plus the pass, per iteration, reported as IR instructions per second.
// Targets (issue 3): >= 5M instructions/s for the global pass including SSA construction, and
// linear growth (per-instruction time at 100k blocks within 2x of that at 1k).
#include "objprof/ir/analysis.h"
#include "objprof/ir/elim.h"
#include "objprof/ir/generate.h"

#include <benchmark/benchmark.h>

#include <map>
#include <utility>

namespace {

using objprof::ir::CfgShape;
using objprof::ir::Function;

const Function& corpus(std::uint32_t blocks, CfgShape shape) {
  static std::map<std::pair<std::uint32_t, int>, Function> cache;
  auto key = std::make_pair(blocks, static_cast<int>(shape));
  auto it = cache.find(key);
  if (it == cache.end()) {
    objprof::ir::GenOptions o;
    o.blocks = blocks;
    o.regs = 16;
    o.shape = shape;
    it = cache.emplace(key, objprof::ir::generate_function(blocks * 31 + 7, o)).first;
  }
  return it->second;
}

template <class Pass>
void run_pass(benchmark::State& state, Pass pass) {
  const Function& f = corpus(static_cast<std::uint32_t>(state.range(0)), static_cast<CfgShape>(state.range(1)));
  objprof::ir::ElimResult result;
  for (auto _ : state) {
    objprof::ir::FunctionAnalyses am(f);
    benchmark::DoNotOptimize(pass.run(f, am, &result));
    benchmark::ClobberMemory();
  }
  const double instrs = static_cast<double>(f.num_instrs());
  state.counters["instrs"] = instrs;
  state.counters["instrs/s"] = benchmark::Counter(instrs, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["ns/instr"] =
      benchmark::Counter(instrs, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert,
                         benchmark::Counter::OneK::kIs1000);
  state.counters["removed%"] = result.accesses.empty() ? 0.0 : 100.0 * static_cast<double>(result.num_removed()) /
                                                                 static_cast<double>(result.accesses.size());
}

void BM_GlobalPass(benchmark::State& state) { run_pass(state, objprof::ir::GlobalElimPass()); }
void BM_PaperPass(benchmark::State& state) { run_pass(state, objprof::ir::PaperElimPass()); }

void BM_SsaOnly(benchmark::State& state) {
  const Function& f = corpus(static_cast<std::uint32_t>(state.range(0)), static_cast<CfgShape>(state.range(1)));
  for (auto _ : state) {
    objprof::ir::FunctionAnalyses am(f);
    benchmark::DoNotOptimize(am.ssa().values.size());
  }
  state.counters["instrs/s"] =
      benchmark::Counter(static_cast<double>(f.num_instrs()), benchmark::Counter::kIsIterationInvariantRate);
}

// One stage at a time, its inputs computed outside the timed loop: where the pass's time goes.
enum Stage { kShape, kCfg, kDominators, kFrontiers, kSsa, kSolve };
void BM_Stage(benchmark::State& state) {
  const Function& f = corpus(static_cast<std::uint32_t>(state.range(0)), static_cast<CfgShape>(state.range(1)));
  const auto stage = static_cast<Stage>(state.range(2));
  objprof::ir::FunctionAnalyses am(f);
  const objprof::ir::FunctionShape& shape = am.shape();
  const objprof::ir::Cfg& cfg = am.cfg();
  const objprof::ir::DomTree& dt = am.domtree();
  const objprof::ir::DominanceFrontiers& df = am.frontiers();
  am.ssa();
  objprof::ir::ElimResult result;
  for (auto _ : state) {
    switch (stage) {
      case kShape: benchmark::DoNotOptimize(objprof::ir::shape_of(f)); break;
      case kCfg: benchmark::DoNotOptimize(objprof::ir::CfgAnalysis::run(shape)); break;
      case kDominators: benchmark::DoNotOptimize(objprof::ir::DominatorTreeAnalysis::run(cfg)); break;
      case kFrontiers: benchmark::DoNotOptimize(objprof::ir::DominanceFrontierAnalysis::run(cfg, dt)); break;
      case kSsa: benchmark::DoNotOptimize(objprof::ir::SsaAnalysis::run(shape, cfg, dt, df)); break;
      case kSolve: benchmark::DoNotOptimize(objprof::ir::GlobalElimPass().run(am, &result)); break;
    }
    benchmark::ClobberMemory();
  }
  state.counters["ns/instr"] =
      benchmark::Counter(static_cast<double>(f.num_instrs()), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert,
                         benchmark::Counter::OneK::kIs1000);
}

void sizes(benchmark::internal::Benchmark* b) {
  for (int shape : {static_cast<int>(CfgShape::kStructured), static_cast<int>(CfgShape::kUnstructured),
                    static_cast<int>(CfgShape::kMixed)}) {
    for (int blocks : {100, 1000, 10000, 100000}) b->Args({blocks, shape});
  }
  b->ArgNames({"blocks", "shape"});
  b->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_GlobalPass)->Apply(sizes);
BENCHMARK(BM_PaperPass)->Apply(sizes);
BENCHMARK(BM_SsaOnly)->Apply(sizes);
BENCHMARK(BM_Stage)
    ->ArgsProduct({{1000, 100000},
                   {static_cast<int>(CfgShape::kStructured), static_cast<int>(CfgShape::kUnstructured)},
                   {kShape, kCfg, kDominators, kFrontiers, kSsa, kSolve}})
    ->ArgNames({"blocks", "shape", "stage"})
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
