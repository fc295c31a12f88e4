// A FunctionAnalyses reset from function to function (what a compiler thread does) keeps its
// arrays' storage; nothing of the function before may leak into the next one's results. Each
// function is analysed once by a manager that has seen a stream of other functions (larger,
// smaller, other shapes, unreachable blocks, wide register files, a shape without IR) and once
// by a fresh one: every analysis and every decision must be identical.
#include <catch2/catch.hpp>

#include "ir_test_util.h"
#include "objprof/ir/analysis.h"
#include "objprof/ir/elim.h"
#include "objprof/ir/function_shape.h"
#include "objprof/ir/generate.h"

#include <random>
#include <vector>

namespace objprof::ir::analysis_reuse_test {
namespace {

TEST_CASE("FunctionAnalyses: a manager reset from function to function answers as a fresh one", "[ir][analysis][reuse][single-threaded]") {
  std::mt19937_64 rng(20261124);
  FunctionAnalyses reused;  // one manager, one pass and one result for the whole stream
  ElimResult reused_result;
  const int functions = test::scaled(120);
  for (int i = 0; i < functions; ++i) {
    const Function f = test::stream_function(rng, i);
    const ElimOptions options = test::stream_options(i);
    INFO("function " << i << ": " << f.blocks.size() << " blocks, " << f.num_regs << " registers");
    REQUIRE(verify_function(f).ok());

    FunctionAnalyses fresh(f);
    ElimResult fresh_result;
    GlobalElimPass(options).run(f, fresh, &fresh_result);

    // Every third function arrives as a shape only, as from a VM's own description.
    const FunctionShape shape = shape_of(f);
    if (i % 3 == 0) {
      reused.reset(shape);
      REQUIRE_FALSE(reused.has_function());
    } else {
      reused.reset(f);
      REQUIRE(reused.has_function());
    }
    GlobalElimPass(options).run(reused, &reused_result);
    test::require_same_result(reused_result, fresh_result);
    test::require_same_analyses(reused, fresh);
    REQUIRE(verify_ssa(f, reused.cfg(), reused.domtree(), reused.ssa()).ok());
  }
}

TEST_CASE("FunctionAnalyses: invalidate recomputes from the same function", "[ir][analysis][reuse]") {
  GenOptions o;
  o.shape = CfgShape::kUnstructured;
  o.blocks = 200;
  Function f = generate_function(77, o);
  FunctionAnalyses am(f);
  ElimResult before, after;
  GlobalElimPass().run(f, am, &before);
  const std::size_t phis = am.ssa().num_phis();
  // Change the function in place (one more definition in the entry block) and invalidate: the
  // results must be those of the changed function, not the cached ones.
  Function changed = f;
  Instr def;
  def.op = Opcode::kNull;
  def.dst = 0;
  changed.blocks[0].instrs.insert(changed.blocks[0].instrs.begin(), def);
  f = changed;
  am.invalidate();
  FunctionAnalyses fresh(f);
  test::require_same_analyses(am, fresh);
  ElimResult fresh_result;
  GlobalElimPass().run(f, fresh, &fresh_result);
  GlobalElimPass().run(f, am, &after);
  test::require_same_result(after, fresh_result);
  REQUIRE(am.ssa().values.size() == fresh.ssa().values.size());
  REQUIRE(am.ssa().num_phis() >= phis);
}

}  // namespace
}  // namespace objprof::ir
