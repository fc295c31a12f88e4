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

namespace objprof::ir {
namespace {

template <class T>
void require_same_lists(const CsrLists<T>& a, const CsrLists<T>& b) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    auto x = a[i];
    auto y = b[i];
    REQUIRE(std::vector<T>(x.begin(), x.end()) == std::vector<T>(y.begin(), y.end()));
  }
}

void require_same_analyses(FunctionAnalyses& reused, FunctionAnalyses& fresh) {
  const Cfg& c1 = reused.cfg();
  const Cfg& c2 = fresh.cfg();
  require_same_lists(c1.succs, c2.succs);
  require_same_lists(c1.preds, c2.preds);
  REQUIRE(c1.pred_position == c2.pred_position);
  REQUIRE(c1.rpo == c2.rpo);
  REQUIRE(c1.rpo_index == c2.rpo_index);
  REQUIRE(c1.critical_edges == c2.critical_edges);
  REQUIRE(c1.unreachable == c2.unreachable);
  const DomTree& d1 = reused.domtree();
  const DomTree& d2 = fresh.domtree();
  REQUIRE(d1.idom == d2.idom);
  require_same_lists(d1.children, d2.children);
  REQUIRE(d1.pre == d2.pre);
  REQUIRE(d1.post == d2.post);
  require_same_lists(reused.frontiers().df, fresh.frontiers().df);
  const SsaForm& s1 = reused.ssa();
  const SsaForm& s2 = fresh.ssa();
  REQUIRE(s1.num_regs == s2.num_regs);
  REQUIRE(s1.values.size() == s2.values.size());
  for (std::size_t v = 0; v < s1.values.size(); ++v) {
    REQUIRE(s1.values[v].kind == s2.values[v].kind);
    REQUIRE(s1.values[v].reg == s2.values[v].reg);
    REQUIRE(s1.values[v].block == s2.values[v].block);
    REQUIRE(s1.values[v].index == s2.values[v].index);
  }
  REQUIRE(s1.phis.offsets_ == s2.phis.offsets_);
  REQUIRE(s1.phis.total() == s2.phis.total());
  for (std::size_t p = 0; p < s1.phis.total(); ++p) {
    REQUIRE(s1.phis.items_[p].reg == s2.phis.items_[p].reg);
    REQUIRE(s1.phis.items_[p].value == s2.phis.items_[p].value);
    REQUIRE(s1.phis.items_[p].first_arg == s2.phis.items_[p].first_arg);
    REQUIRE(s1.phis.items_[p].num_args == s2.phis.items_[p].num_args);
  }
  REQUIRE(s1.phi_args == s2.phi_args);
  REQUIRE(s1.instr_base == s2.instr_base);
  REQUIRE(s1.use_base == s2.use_base);
  REQUIRE(s1.uses == s2.uses);
  REQUIRE(s1.defs == s2.defs);
  REQUIRE(s1.entry_values == s2.entry_values);
  REQUIRE(s1.copy_root == s2.copy_root);
}

void require_same_result(const ElimResult& a, const ElimResult& b) {
  test::require_same_decisions(a, b);  // accesses and block_first
  REQUIRE(a.returns_marked == b.returns_marked);
  REQUIRE(a.allocation_marks == b.allocation_marks);
  REQUIRE(a.roots_marked == b.roots_marked);
}

TEST_CASE("FunctionAnalyses: a manager reset from function to function answers as a fresh one", "[ir][analysis][reuse]") {
  std::mt19937_64 rng(20261124);
  FunctionAnalyses reused;  // one manager, one pass and one result for the whole stream
  ElimResult reused_result;
  const int functions = test::scaled(120);
  for (int i = 0; i < functions; ++i) {
    GenOptions o;
    o.shape = static_cast<CfgShape>(rng() % 3);
    // Sizes jump up and down so that arrays are both larger and smaller than the function's.
    o.blocks = 1 + static_cast<std::uint32_t>(rng() % (i % 7 == 0 ? 2000 : 120));
    o.regs = 2 + static_cast<std::uint32_t>(rng() % 20);
    o.safepoint_percent = static_cast<std::uint32_t>(rng() % 30);
    Function f = generate_function(rng(), o);
    if (i % 11 == 5) f.num_regs = 300;  // the one-register-at-a-time phi placement
    ElimOptions options;
    options.allocation_marks = (i & 1) != 0;
    options.roots_marked = (i & 2) != 0;
    options.safepoints = i % 5 == 0 ? SafepointMode::kPaper : SafepointMode::kExact;
    options.self_check = true;
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
    require_same_result(reused_result, fresh_result);
    require_same_analyses(reused, fresh);
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
  require_same_analyses(am, fresh);
  ElimResult fresh_result;
  GlobalElimPass().run(f, fresh, &fresh_result);
  GlobalElimPass().run(f, am, &after);
  require_same_result(after, fresh_result);
  REQUIRE(am.ssa().values.size() == fresh.ssa().values.size());
  REQUIRE(am.ssa().num_phis() >= phis);
}

}  // namespace
}  // namespace objprof::ir
