// Property tests over generated CFGs: every pass passes the checker; the global pass never
// keeps a barrier the paper pass removes; `none` keeps everything. And the checker itself can
// fail: deliberately unsound decisions are caught, with a minimal path.
#include <catch2/catch.hpp>

#include "ir_test_util.h"
#include "objprof/ir/checker.h"
#include "objprof/ir/elim.h"
#include "objprof/ir/generate.h"

namespace objprof::ir::property_test {
namespace {

TEST_CASE("Properties: every pass is sound and global dominates paper on generated CFGs", "[ir][single-threaded]") {
  const int per_shape = test::scaled(700);
  const std::uint32_t paths = static_cast<std::uint32_t>(test::scaled(25));
  std::size_t total = 0, paper_removed = 0, global_removed = 0, strictly_better = 0;
  for (int shape = 0; shape < 3; ++shape) {
    for (int i = 0; i < per_shape; ++i) {
      GenOptions o;
      o.shape = static_cast<CfgShape>(shape);
      o.blocks = 2 + static_cast<std::uint32_t>((i * 7) % 40);
      o.regs = 2 + static_cast<std::uint32_t>(i % 7);
      o.safepoint_percent = static_cast<std::uint32_t>(i % 4) * 6;
      o.reassign_percent = 10 + static_cast<std::uint32_t>(i % 5) * 12;
      const std::uint64_t seed = static_cast<std::uint64_t>(shape) * 100000 + static_cast<std::uint64_t>(i);
      Function f = generate_function(seed, o);
      INFO("shape " << shape << " seed " << seed << "\n" << print_function(f));
      REQUIRE(verify_function(f).ok());
      for (SafepointMode sp : {SafepointMode::kExact, SafepointMode::kPaper}) {
        ElimOptions eo;
        eo.safepoints = sp;
        eo.self_check = true;
        eo.pass = PassKind::kNone;
        auto none = run_elim(f, eo);
        eo.pass = PassKind::kPaper;
        auto paper = run_elim(f, eo);
        eo.pass = PassKind::kGlobal;
        auto global = run_elim(f, eo);
        REQUIRE((none.ok() && paper.ok() && global.ok()));
        REQUIRE(none->num_removed() == 0);
        REQUIRE(paper->accesses.size() == global->accesses.size());
        for (std::size_t k = 0; k < paper->accesses.size(); ++k) {
          INFO("site #" << paper->accesses[k].site);
          REQUIRE((paper->accesses[k].kept || !global->accesses[k].kept));
        }
        for (const ElimResult* r : {&*none, &*paper, &*global}) {
          CheckReport report = check_function(f, *r, check_options_for(*r, paths, seed + 1));
          INFO(pass_name(r->pass) << " safepoints " << safepoint_mode_name(sp));
          if (!report.ok()) FAIL(format_violation(f, *report.violation));
        }
        if (sp == SafepointMode::kExact) {
          total += paper->accesses.size();
          paper_removed += paper->num_removed();
          global_removed += global->num_removed();
          strictly_better += global->num_removed() > paper->num_removed() ? 1 : 0;
        }
      }
    }
  }
  INFO("accesses " << total << " paper removed " << paper_removed << " global removed " << global_removed);
  CHECK(paper_removed > total / 10);
  CHECK(global_removed > paper_removed);
  CHECK(strictly_better > 0);
}

TEST_CASE("Properties: a 10k-block function of each shape passes the checker", "[ir]") {
  for (int shape = 0; shape < 3; ++shape) {
    GenOptions o;
    o.shape = static_cast<CfgShape>(shape);
    o.blocks = static_cast<std::uint32_t>(test::scaled(10000));
    o.regs = 16;
    Function f = generate_function(4242 + static_cast<std::uint64_t>(shape), o);
    auto r = run_elim(f, ElimOptions{});
    REQUIRE(r.ok());
    CheckOptions co = check_options_for(*r, 4, 5);
    co.max_steps = 5000;
    CHECK(check_function(f, *r, co).ok());
  }
}

ElimResult remove_everything(const Function& f) {
  ElimResult r = make_all_kept(f);
  for (AccessDecision& d : r.accesses) {
    d.kept = false;
    d.reason = Reason::kDominated;
  }
  return r;
}

TEST_CASE("Checker: an unsound 'pass' that removes every barrier is caught", "[ir]") {
  Module m = test::parse_or_die(test::read_file(test::data_path("straight_line.ir")), "straight_line.ir");
  const Function& f = m.functions[0];
  CheckReport report = check_function(f, remove_everything(f), CheckOptions{});
  REQUIRE_FALSE(report.ok());
  CHECK(report.violation->site == 1);
  CHECK(report.violation->path.size() == 1);
  CHECK(format_violation(f, *report.violation).rfind("site #1 (block entry, v5): object o", 0) == 0);

  // On generated CFGs it is caught almost always (only functions whose accesses all see null
  // or scalars could escape), and the reported paths are short.
  int caught = 0, tried = 0;
  std::size_t longest = 0;
  for (int i = 0; i < test::scaled(200); ++i) {
    GenOptions o;
    o.blocks = 20;
    Function g = generate_function(static_cast<std::uint64_t>(i), o);
    ElimResult bad = remove_everything(g);
    if (bad.accesses.empty()) continue;
    ++tried;
    CheckReport r = check_function(g, bad, CheckOptions{});
    if (!r.ok()) {
      ++caught;
      longest = std::max(longest, r.violation->path.size());
    }
  }
  CHECK(caught >= tried * 9 / 10);
  CHECK(longest <= 20);
}

TEST_CASE("Checker: an off-by-one 'pass' that ignores definitions is caught with a minimal path", "[ir]") {
  // Treat every access to a register seen before as redundant, ignoring reassignment: the
  // classic bug the paper's "c(r) clears the bit" prevents.
  Module m = test::parse_or_die(test::read_file(test::data_path("loop_reassign.ir")), "loop_reassign.ir");
  const Function& f = m.functions[0];
  ElimResult r = make_all_kept(f);
  std::vector<bool> seen(f.num_regs, false);
  for (AccessDecision& d : r.accesses) {
    if (seen[d.reg]) {
      d.kept = false;
      d.reason = Reason::kDominated;
    }
    seen[d.reg] = true;
  }
  CheckReport report = check_function(f, r, CheckOptions{});
  REQUIRE_FALSE(report.ok());
  // The shortest failing run: around the loop once and back to the header (site #3 sees the
  // next list node), or into the body via the removed #6 -- never a long path.
  CHECK(report.violation->path.size() <= 4);
  CHECK(report.violation->path.front().block == 0);
}

TEST_CASE("Checker: runs are deterministic for a seed", "[ir]") {
  GenOptions o;
  o.blocks = 50;
  Function f = generate_function(12, o);
  auto r = run_elim(f, ElimOptions{});
  REQUIRE(r.ok());
  CheckReport a = check_function(f, *r, check_options_for(*r, 50, 9));
  CheckReport b = check_function(f, *r, check_options_for(*r, 50, 9));
  CHECK(a.steps == b.steps);
  CHECK(a.accesses == b.accesses);
  CHECK(a.gcs == b.gcs);
  CHECK(a.gcs > 0);
}

}  // namespace
}  // namespace objprof::ir
