// CFG, dominator tree, dominance frontiers and SSA: expected results on hand-written CFGs and
// the verifiers on generated ones (unreachable blocks, self loops, irreducible loops).
#include <catch2/catch.hpp>

#include "ir_test_util.h"
#include "objprof/ir/analysis.h"
#include "objprof/ir/generate.h"

namespace objprof::ir::analysis_test {
namespace {

BlockId block(const Function& f, std::string_view name) {
  for (BlockId b = 0; b < f.blocks.size(); ++b) {
    if (f.blocks[b].name == name) return b;
  }
  FAIL("no block " << name);
  return kNoBlock;
}

TEST_CASE("Analyses: Fig. 4 dominator tree, frontiers and phis", "[ir]") {
  Module m = test::parse_or_die(test::read_file(test::data_path("fig4c.ir")), "fig4c.ir");
  const Function& f = m.functions[0];
  FunctionAnalyses am(f);
  const DomTree& dt = am.domtree();
  CHECK(dt.idom[block(f, "b")] == block(f, "a"));
  CHECK(dt.idom[block(f, "c")] == block(f, "b"));
  CHECK(dt.idom[block(f, "d")] == block(f, "b"));
  CHECK(dt.idom[block(f, "e")] == block(f, "b"));
  CHECK(dt.idom[block(f, "exit")] == block(f, "e"));
  CHECK(print_domtree(f, dt) ==
        "dominator tree of fig4c:\n  a: root\n  b: idom a\n  c: idom b\n  d: idom b\n  e: idom b\n  exit: idom e\n");
  CHECK(print_frontiers(f, am.frontiers()) ==
        "dominance frontiers of fig4c:\n  a: {}\n  b: {b}\n  c: {e}\n  d: {e}\n  e: {b}\n  exit: {}\n");
  const SsaForm& ssa = am.ssa();
  // v5 is changed in c: phis at e and at b (and v1, v2 get phis too; they are defined in b/c).
  auto has_phi = [&](std::string_view b, Reg r) {
    for (const auto& phi : ssa.phis[block(f, b)]) {
      if (phi.reg == r) return true;
    }
    return false;
  };
  CHECK(has_phi("b", 5));
  CHECK(has_phi("e", 5));
  CHECK_FALSE(has_phi("c", 5));
  CHECK_FALSE(has_phi("d", 5));
  CHECK(verify_domtree(f, am.cfg(), dt).ok());
  CHECK(verify_frontiers(f, am.cfg(), dt, am.frontiers()).ok());
  CHECK(verify_ssa(f, am.cfg(), dt, ssa).ok());
  CHECK(print_ssa(f, am.cfg(), ssa).find("= phi v5") != std::string::npos);
}

TEST_CASE("Analyses: unreachable blocks, self loops, critical edges", "[ir]") {
  Module m = test::parse_or_die(test::read_file(test::data_path("unreachable.ir")), "unreachable.ir");
  const Function& f = m.functions[0];
  FunctionAnalyses am(f);
  const Cfg& cfg = am.cfg();
  CHECK_FALSE(cfg.reachable(block(f, "dead")));
  CHECK(cfg.unreachable == std::vector<BlockId>{block(f, "dead")});
  // spin -> spin is critical (spin has two successors, and two reachable predecessors).
  CHECK(std::find(cfg.critical_edges.begin(), cfg.critical_edges.end(), std::make_pair(block(f, "spin"), block(f, "spin"))) !=
        cfg.critical_edges.end());
  const DomTree& dt = am.domtree();
  CHECK(dt.idom[block(f, "dead")] == kNoBlock);
  CHECK_FALSE(dt.dominates(block(f, "entry"), block(f, "dead")));
  // exit's only reachable predecessor is spin; the dead edge does not count.
  CHECK(dt.idom[block(f, "exit")] == block(f, "spin"));
  CHECK(am.frontiers().df.copy_of(block(f, "spin")) == std::vector<BlockId>{block(f, "spin")});
  CHECK(verify_ssa(f, cfg, dt, am.ssa()).ok());
  CHECK(print_cfg(f, cfg).find("dead (unreachable)") != std::string::npos);
}

TEST_CASE("Analyses: irreducible loop has both heads in each other's frontier", "[ir]") {
  Module m = test::parse_or_die(test::read_file(test::data_path("irreducible.ir")), "irreducible.ir");
  const Function& f = m.functions[0];
  FunctionAnalyses am(f);
  CHECK(am.domtree().idom[block(f, "a")] == block(f, "entry"));
  CHECK(am.domtree().idom[block(f, "b")] == block(f, "entry"));
  CHECK(am.frontiers().df.copy_of(block(f, "a")) == std::vector<BlockId>{block(f, "b"), block(f, "exit")});
  CHECK(verify_ssa(f, am.cfg(), am.domtree(), am.ssa()).ok());
}

TEST_CASE("Analyses: the structural verifier rejects malformed functions", "[ir]") {
  Function f;
  f.name = "bad";
  CHECK_FALSE(verify_function(f).ok());
  f.num_regs = 1;
  f.blocks.push_back(Block{"entry", {}});
  CHECK(verify_function(f).error().message == "function 'bad': block 'entry' is empty (needs a terminator)");
  Instr ret;
  ret.op = Opcode::kGoto;
  ret.targets = {0};
  f.blocks[0].instrs.push_back(ret);
  CHECK(verify_function(f).error().message.find("branches to the entry block") != std::string::npos);
  f.blocks[0].instrs[0] = Instr{};
  f.blocks[0].instrs[0].op = Opcode::kReturn;
  f.blocks[0].instrs[0].args = {3};
  CHECK(verify_function(f).error().message.find("register v3 out of range") != std::string::npos);
}

TEST_CASE("Analyses: verifiers agree on generated CFGs of every shape", "[ir]") {
  const int per_shape = test::scaled(150);
  std::size_t phis = 0, unreachable = 0, self_loops = 0;
  for (int shape = 0; shape < 3; ++shape) {
    for (int i = 0; i < per_shape; ++i) {
      GenOptions o;
      o.shape = static_cast<CfgShape>(shape);
      o.blocks = 2 + static_cast<std::uint32_t>(i % 60);
      o.regs = 2 + static_cast<std::uint32_t>(i % 9);
      Function f = generate_function(static_cast<std::uint64_t>(1000 * shape + i), o);
      INFO("shape " << shape << " seed " << i);
      REQUIRE(verify_function(f).ok());
      FunctionAnalyses am(f);
      REQUIRE(verify_domtree(f, am.cfg(), am.domtree()).ok());
      REQUIRE(verify_frontiers(f, am.cfg(), am.domtree(), am.frontiers()).ok());
      REQUIRE(verify_ssa(f, am.cfg(), am.domtree(), am.ssa()).ok());
      phis += am.ssa().num_phis();
      unreachable += am.cfg().unreachable.size();
      for (BlockId b = 0; b < f.blocks.size(); ++b) {
        const auto& s = am.cfg().succs[b];
        self_loops += std::find(s.begin(), s.end(), b) != s.end() ? 1 : 0;
      }
    }
  }
  // The generator really produces the interesting cases.
  CHECK(phis > 100);
  CHECK(unreachable > 0);
  CHECK(self_loops > 0);
}

TEST_CASE("Analyses: a 100k-block function is handled iteratively", "[ir][single-threaded]") {
  GenOptions o;
  o.blocks = static_cast<std::uint32_t>(test::scaled(100000));
  o.shape = CfgShape::kUnstructured;
  o.max_block_instrs = 2;
  Function f = generate_function(99, o);
  FunctionAnalyses am(f);
  CHECK(am.cfg().rpo.size() > 0);
  CHECK(verify_domtree(f, am.cfg(), am.domtree()).ok());
  CHECK(verify_ssa(f, am.cfg(), am.domtree(), am.ssa()).ok());
}

}  // namespace
}  // namespace objprof::ir
