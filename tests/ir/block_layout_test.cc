// The global pass on a copy of the function laid out in reverse post-order
// (ElimOptions::Layout, src/ir/block_layout.h) must decide exactly what it decides on the blocks
// as given, and leave the caller's manager answering for the original function.
#include <catch2/catch.hpp>

#include "ir_test_util.h"
#include "objprof/ir/analysis.h"
#include "objprof/ir/elim.h"
#include "objprof/ir/function_shape.h"
#include "objprof/ir/generate.h"

// White-box: the layout itself is internal to the pass.
#include "../../src/ir/block_layout.h"

#include <random>
#include <vector>

namespace objprof::ir::block_layout_test {
namespace {

ElimOptions with_layout(ElimOptions o, ElimOptions::Layout layout) {
  o.layout = layout;
  return o;
}

TEST_CASE("Layout: the copy is the function with its blocks renamed into RPO", "[ir][elim][layout][single-threaded]") {
  std::mt19937_64 rng(20261125);
  RpoLayout layout;  // reused, as the pass reuses it
  int laid_out_count = 0;
  const int functions = test::scaled(60);
  for (int i = 0; i < functions; ++i) {
    GenOptions o;
    o.shape = static_cast<CfgShape>(i % 3);
    o.blocks = 2 + static_cast<std::uint32_t>(rng() % (i % 5 == 0 ? 3000 : 200));
    o.regs = 2 + static_cast<std::uint32_t>(rng() % 12);
    const Function f = generate_function(rng(), o);
    const FunctionShape shape = shape_of(f);
    FunctionAnalyses original(shape);
    const Cfg& cfg = original.cfg();
    INFO("function " << i << ": " << shape.num_blocks() << " blocks");
    if (!lay_out_in_rpo(shape, layout, false)) {
      // Declined only when there is nothing to move.
      for (std::uint32_t k = 0; k < cfg.rpo.size(); ++k) REQUIRE(cfg.rpo[k] == k);
      continue;
    }
    ++laid_out_count;
    const FunctionShape& s = layout.shape;
    REQUIRE(verify_shape(s).ok());
    const std::size_t n = shape.num_blocks();
    REQUIRE(layout.old_of.size() == n);
    REQUIRE(layout.old_of[0] == 0);  // the entry stays the entry
    REQUIRE(layout.num_reachable == cfg.rpo.size());
    for (BlockId b = 0; b < n; ++b) REQUIRE(layout.old_of[layout.new_of[b]] == b);
    // Reachable blocks first, in the original's RPO; then the unreachable ones in id order.
    for (std::uint32_t k = 0; k < cfg.rpo.size(); ++k) REQUIRE(layout.old_of[k] == cfg.rpo[k]);
    for (std::uint32_t k = 0; k < cfg.unreachable.size(); ++k) REQUIRE(layout.old_of[cfg.rpo.size() + k] == cfg.unreachable[k]);
    REQUIRE(s.num_regs == shape.num_regs);
    REQUIRE(s.receiver == shape.receiver);
    for (BlockId i2 = 0; i2 < n; ++i2) {
      const BlockId b = layout.old_of[i2];
      REQUIRE(s.block_begin[i2 + 1] - s.block_begin[i2] == shape.block_begin[b + 1] - shape.block_begin[b]);
      for (InstrId j = 0; j < shape.block_begin[b + 1] - shape.block_begin[b]; ++j) {
        const InstrId x = s.block_begin[i2] + j, y = shape.block_begin[b] + j;
        REQUIRE(s.dst[x] == shape.dst[y]);
        REQUIRE(s.flags[x] == shape.flags[y]);
        REQUIRE(s.accessed[x] == shape.accessed[y]);
        REQUIRE(s.site[x] == shape.site[y]);
        const auto a = s.operands(x), c = shape.operands(y);
        REQUIRE(std::vector<Reg>(a.begin(), a.end()) == std::vector<Reg>(c.begin(), c.end()));
      }
      std::vector<BlockId> want;
      for (BlockId t : shape.succs[b]) want.push_back(layout.new_of[t]);
      const auto got = s.succs[i2];
      REQUIRE(std::vector<BlockId>(got.begin(), got.end()) == want);
    }
    // The copy's own RPO is 0, 1, 2, ...: the walks the pass makes over it stream.
    FunctionAnalyses laid_out(s);
    for (std::uint32_t k = 0; k < laid_out.cfg().rpo.size(); ++k) REQUIRE(laid_out.cfg().rpo[k] == k);
    REQUIRE(laid_out.cfg().rpo.size() == cfg.rpo.size());
    // Told that the copy is in RPO (as the pass tells its manager), the analyses skip the walk
    // and are the same. The manager forgets the hint at the next reset: bound to the original,
    // whose blocks are not in RPO, it walks again.
    FunctionAnalyses told;
    told.reset_in_rpo(s, layout.num_reachable);
    test::require_same_analyses(told, laid_out);
    told.reset(shape);
    test::require_same_analyses(told, original);
    REQUIRE_FALSE(lay_out_in_rpo(s, layout, false));  // nothing left to move
  }
  REQUIRE(laid_out_count * 2 > functions);  // most generated functions are not in RPO
}

TEST_CASE("Layout: the global pass decides the same on the blocks laid out in RPO", "[ir][elim][layout][single-threaded]") {
  std::mt19937_64 rng(20261126);
  FunctionAnalyses reused;  // one manager for the whole stream, as a compiler thread keeps
  ElimResult laid_out_result;
  for (int i = 0; i < test::scaled(150); ++i) {
    const Function f = test::stream_function(rng, i);
    const ElimOptions options = test::stream_options(i);
    INFO("function " << i << ": " << f.blocks.size() << " blocks, " << f.num_regs << " registers");
    REQUIRE(verify_function(f).ok());

    FunctionAnalyses as_given(f);
    ElimResult as_given_result;
    const bool removed = GlobalElimPass(with_layout(options, ElimOptions::Layout::kAsGiven)).run(f, as_given, &as_given_result);

    // Half of the functions arrive as a shape only, as from a VM's own description.
    const FunctionShape shape = shape_of(f);
    if (i % 2 == 0) {
      reused.reset(shape);
    } else {
      reused.reset(f);
    }
    REQUIRE(GlobalElimPass(with_layout(options, ElimOptions::Layout::kRpo)).run(reused, &laid_out_result) == removed);
    test::require_same_result(laid_out_result, as_given_result);
    // The manager answers for the original function again, as a fresh one does.
    REQUIRE(reused.has_function() == (i % 2 != 0));
    FunctionAnalyses fresh(f);
    test::require_same_analyses(reused, fresh);
    REQUIRE(verify_ssa(f, reused.cfg(), reused.domtree(), reused.ssa()).ok());
  }
}

TEST_CASE("Layout: by default a large scattered function is laid out, with the same decisions", "[ir][elim][layout][single-threaded]") {
  // Above ElimOptions::kLayoutMinInstrs, unstructured code whose RPO jumps far (pieces of a
  // chain reached from anywhere) is what the layout is for; structured code is left as given.
  GenOptions o;
  o.blocks = 24000;
  o.regs = 16;
  o.shape = CfgShape::kUnstructured;
  const Function f = generate_function(42, o);
  const FunctionShape shape = shape_of(f);
  REQUIRE(shape.num_instrs() >= ElimOptions::kLayoutMinInstrs);
  RpoLayout layout;
  REQUIRE(lay_out_in_rpo(shape, layout, true));

  o.shape = CfgShape::kStructured;
  const FunctionShape structured = shape_of(generate_function(42, o));
  REQUIRE(structured.num_instrs() >= ElimOptions::kLayoutMinInstrs);
  REQUIRE_FALSE(lay_out_in_rpo(structured, layout, true));
  REQUIRE(lay_out_in_rpo(structured, layout, false));  // not already in RPO: only not worth it

  for (const ElimOptions& options : {ElimOptions{}, ElimOptions{.allocation_marks = true, .roots_marked = true}}) {
    FunctionAnalyses by_default(shape), as_given(shape);
    ElimResult a, b;
    GlobalElimPass(options).run(by_default, &a);
    GlobalElimPass(with_layout(options, ElimOptions::Layout::kAsGiven)).run(as_given, &b);
    REQUIRE(a.num_removed() > 0);
    test::require_same_result(a, b);
  }
}

}  // namespace
}  // namespace objprof::ir
