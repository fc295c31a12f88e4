// FunctionShape, the front door through which a VM describes a function to the analyses and the
// global pass: hand-built shapes get the decisions the IR would get, random functions described
// through the public builder match the IR pass decision for decision, bad shapes are refused
// with a message, and the two phi-placement strategies (bit sets, one register at a time) agree.
#include <catch2/catch.hpp>

#include "ir_test_util.h"
#include "objprof/ir/analysis.h"
#include "objprof/ir/elim.h"
#include "objprof/ir/function_shape.h"
#include "objprof/ir/generate.h"

#include <string>

namespace objprof::ir::shape_test {
namespace {

using Flag = FunctionShape::Flag;

// Re-describes an IR function through the public builder only (what a VM would do), without
// shape_of.
FunctionShape describe_with_builder(const Function& f) {
  FunctionShapeBuilder b(f.num_regs);
  if (f.has_receiver) b.set_receiver(f.params[0]);
  for (const Block& block : f.blocks) {
    b.begin_block();
    for (const Instr& in : block.instrs) {
      std::uint8_t flags = 0;
      if (may_gc(in)) flags |= FunctionShape::kMayGc;
      if (in.op == Opcode::kMove) flags |= FunctionShape::kCopy;
      if (in.op == Opcode::kNew || in.op == Opcode::kNewArray) flags |= FunctionShape::kAllocates;
      if (in.result_marked && in.dst != kNoReg) flags |= FunctionShape::kResultMarked;
      if (in.op == Opcode::kReturn && in.args.size() == 1) flags |= FunctionShape::kReturns;
      std::vector<Reg> uses(in.args.begin(), in.args.end());
      auto accessed = static_cast<std::uint8_t>((1u << num_accesses(in)) - 1);
      b.add_instr(in.dst, uses, accessed, flags, accessed != 0 ? in.site : kNoSite);
    }
    for (BlockId t : block.instrs.back().targets) b.add_successor(t);
  }
  auto shape = std::move(b).finish();
  REQUIRE(shape.ok());
  return std::move(shape).value();
}

using test::require_same_decisions;

// entry: access v0 (#1); br -> left | right
// left:  access v0 (#2) [; safepoint] -> join          right: v1 = move v0; access v1 (#3) -> join
// join:  access v0 (#4); ret
FunctionShape diamond(bool gc_in_left) {
  FunctionShapeBuilder b(3);
  b.begin_block();
  b.add_instr(kNoReg, {0}, 0b1, 0, 1);
  b.add_instr(kNoReg, {2}, 0, 0);  // the branch
  b.add_successor(1);
  b.add_successor(2);
  b.begin_block();
  b.add_instr(kNoReg, {0}, 0b1, 0, 2);
  if (gc_in_left) b.add_instr(kNoReg, {}, 0, Flag::kMayGc);
  b.add_instr(kNoReg, {}, 0, 0);
  b.add_successor(3);
  b.begin_block();
  b.add_instr(1, {0}, 0, Flag::kCopy);
  b.add_instr(kNoReg, {1}, 0b1, 0, 3);
  b.add_instr(kNoReg, {}, 0, 0);
  b.add_successor(3);
  b.begin_block();
  b.add_instr(kNoReg, {0}, 0b1, 0, 4);
  b.add_instr(kNoReg, {}, 0, 0);
  auto shape = std::move(b).finish();
  REQUIRE(shape.ok());
  return std::move(shape).value();
}

TEST_CASE("FunctionShape: a VM's own description gets the global pass's decisions", "[ir][shape]") {
  SECTION("both arms access the object (one through a copy): the join's barrier goes") {
    FunctionShape shape = diamond(false);
    FunctionAnalyses am(shape);
    CHECK_FALSE(am.has_function());
    ElimResult r;
    CHECK(GlobalElimPass().run(am, &r));
    REQUIRE(r.accesses.size() == 4);
    CHECK(r.accesses[0].kept);                // #1: first access
    CHECK_FALSE(r.accesses[1].kept);          // #2: #1 covers it (across a block boundary)
    CHECK(r.accesses[1].reason == Reason::kAvailableAllPaths);
    CHECK_FALSE(r.accesses[2].kept);          // #3: v1 is a copy of v0
    CHECK_FALSE(r.accesses[3].kept);          // #4: available on all paths
    CHECK(r.accesses[3].block == 3);
    CHECK(r.accesses[3].instr == 0);
    CHECK(r.accesses[3].reg == 0);
  }
  SECTION("a GC point on one arm keeps the join's barrier") {
    FunctionShape shape = diamond(true);
    FunctionAnalyses am(shape);
    ElimResult r;
    GlobalElimPass().run(am, &r);
    REQUIRE(r.accesses.size() == 4);
    CHECK(r.accesses[3].kept);
    CHECK(r.accesses[3].reason == Reason::kNotAvailable);
    SECTION("unless safepoints are ignored") {
      ElimOptions o;
      o.safepoints = SafepointMode::kPaper;
      FunctionAnalyses am2(shape);
      GlobalElimPass(o).run(am2, &r);
      CHECK_FALSE(r.accesses[3].kept);
    }
  }
}

TEST_CASE("FunctionShape: random functions described through the builder match the IR pass", "[ir][shape][single-threaded]") {
  const int per_shape = test::scaled(60);
  std::size_t removed = 0;
  auto tune = [](int i, GenOptions& o) {
    o.blocks = 2 + static_cast<std::uint32_t>((i * 37) % 300);
    o.regs = 2 + static_cast<std::uint32_t>(i % 20);
  };
  test::for_each_generated(per_shape, 7000, tune, [&](int shape_kind, int i, Function& f) {
    f.has_receiver = i % 2 == 0 && !f.params.empty();
    INFO("shape " << shape_kind << " seed " << i);
    REQUIRE(verify_function(f).ok());
    FunctionShape described = describe_with_builder(f);
    FunctionShape derived = shape_of(f);
    CHECK(verify_shape(derived).ok());
    REQUIRE(described.uses == derived.uses);
    REQUIRE(described.flags == derived.flags);
    REQUIRE(described.accessed == derived.accessed);
    REQUIRE(described.receiver == derived.receiver);
    for (int mode_and_assumptions = 0; mode_and_assumptions < 4; ++mode_and_assumptions) {
      ElimOptions options;
      options.safepoints = mode_and_assumptions % 2 == 0 ? SafepointMode::kExact : SafepointMode::kPaper;
      options.allocation_marks = options.receiver_marked = mode_and_assumptions >= 2;
      options.self_check = true;
      Result<ElimResult> from_ir = run_elim(f, options);
      REQUIRE(from_ir.ok());
      FunctionAnalyses am(described);
      ElimResult from_shape;
      GlobalElimPass(options).run(am, &from_shape);
      require_same_decisions(*from_ir, from_shape);
      removed += from_shape.num_removed();
    }
  });
  CHECK(removed > 100);  // the comparison covers removals, not only kept barriers
}

TEST_CASE("FunctionShape: malformed descriptions are refused with a reason", "[ir][shape]") {
  auto error_of = [](FunctionShapeBuilder&& b) {
    auto r = std::move(b).finish();
    REQUIRE_FALSE(r.ok());
    return r.error().message;
  };
  {
    FunctionShapeBuilder b(2);
    CHECK_THAT(error_of(std::move(b)), Catch::Contains("no blocks"));
  }
  {
    FunctionShapeBuilder b(2);
    b.begin_block();
    b.add_instr(kNoReg, {5}, 0, 0);
    CHECK_THAT(error_of(std::move(b)), Catch::Contains("operand register 5"));
  }
  {
    FunctionShapeBuilder b(2);
    b.begin_block();
    b.add_instr(7, {}, 0, 0);
    CHECK_THAT(error_of(std::move(b)), Catch::Contains("defines register 7"));
  }
  {
    FunctionShapeBuilder b(2);
    b.begin_block();
    b.add_successor(3);
    CHECK_THAT(error_of(std::move(b)), Catch::Contains("successor block 3 does not exist"));
  }
  {
    FunctionShapeBuilder b(2);
    b.begin_block();
    b.add_successor(1);
    b.begin_block();
    b.add_successor(0);
    CHECK_THAT(error_of(std::move(b)), Catch::Contains("entry"));
  }
  {
    FunctionShapeBuilder b(2);
    b.begin_block();
    b.add_instr(kNoReg, {0}, 0b10, 0, 1);
    CHECK_THAT(error_of(std::move(b)), Catch::Contains("accesses operand 1 of 1"));
  }
  {
    FunctionShapeBuilder b(2);
    b.begin_block();
    b.add_instr(kNoReg, {0}, 0b1, 0);
    CHECK_THAT(error_of(std::move(b)), Catch::Contains("without a site"));
  }
  {
    FunctionShapeBuilder b(2);
    b.begin_block();
    b.add_instr(kNoReg, {0}, 0b1, 0, 4);
    b.add_instr(kNoReg, {1}, 0b1, 0, 4);
    CHECK_THAT(error_of(std::move(b)), Catch::Contains("duplicate site #4"));
  }
  {
    FunctionShapeBuilder b(2);
    b.begin_block();
    b.add_instr(1, {0, 1}, 0, Flag::kCopy);
    CHECK_THAT(error_of(std::move(b)), Catch::Contains("copy"));
  }
  {
    FunctionShapeBuilder b(2);
    b.begin_block();
    b.add_instr(kNoReg, {}, 0, Flag::kAllocates | Flag::kMayGc);
    CHECK_THAT(error_of(std::move(b)), Catch::Contains("allocates or returns a marked object but defines no register"));
  }
  {
    FunctionShapeBuilder b(2);
    b.set_receiver(2);
    b.begin_block();
    b.add_instr(kNoReg, {0}, 0b1, 0, 1);
    CHECK_THAT(error_of(std::move(b)), Catch::Contains("receiver register 2"));
  }
  {
    FunctionShape s = diamond(false);
    s.site.pop_back();
    CHECK_FALSE(verify_shape(s).ok());
  }
}

TEST_CASE("FunctionShape: phis placed one register at a time equal those placed by bit sets", "[ir][shape]") {
  // The same code declared with 16 and with 300 registers (registers 16..299 unused): the wide
  // file takes the one-register-at-a-time placement, the narrow one the bit sets.
  const int per_shape = test::scaled(20);
  auto tune = [](int i, GenOptions& o) {
    o.blocks = 20 + static_cast<std::uint32_t>(i * 13);
    o.regs = 16;
  };
  test::for_each_generated(per_shape, 9100, tune, [&](int shape_kind, int i, Function& narrow) {
    Function wide = narrow;
    wide.num_regs = 300;
    INFO("shape " << shape_kind << " seed " << i);
    FunctionAnalyses an(narrow), aw(wide);
    const SsaForm& sn = an.ssa();
    const SsaForm& sw = aw.ssa();
    REQUIRE(verify_ssa(wide, aw.cfg(), aw.domtree(), sw).ok());
    REQUIRE(sn.num_phis() == sw.num_phis());
    for (BlockId b = 0; b < narrow.blocks.size(); ++b) {
      auto pn = sn.phis[b];
      auto pw = sw.phis[b];
      REQUIRE(pn.size() == pw.size());
      for (std::size_t k = 0; k < pn.size(); ++k) REQUIRE(pn[k].reg == pw[k].reg);
    }
    ElimResult rn, rw;
    GlobalElimPass().run(an, &rn);
    GlobalElimPass().run(aw, &rw);
    require_same_decisions(rn, rw);
  });
}

TEST_CASE("Analyses: dominators of larger unstructured CFGs match the reference", "[ir][shape]") {
  for (std::uint32_t blocks : {300u, 900u, 1800u}) {
    GenOptions o;
    o.shape = CfgShape::kUnstructured;
    o.blocks = blocks;
    o.regs = 4;
    o.max_block_instrs = 2;
    Function f = generate_function(blocks, o);
    FunctionAnalyses am(f);
    INFO(blocks << " blocks");
    REQUIRE(verify_domtree(f, am.cfg(), am.domtree()).ok());
    REQUIRE(verify_frontiers(f, am.cfg(), am.domtree(), am.frontiers()).ok());
  }
}

}  // namespace
}  // namespace objprof::ir
