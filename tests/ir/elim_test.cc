// Text in, text out: each hand-written CFG in tests/data/ir is annotated by a pass and compared
// with tests/data/ir/NAME.PASS.expected (regenerate with OBJPROF_UPDATE_EXPECTED=1 and review
// the diff). Negative cases are labelled: accesses that must keep their barrier.
#include <catch2/catch.hpp>

#include "ir_test_util.h"
#include "objprof/ir/checker.h"
#include "objprof/ir/elim.h"

#include <cstdlib>
#include <fstream>

namespace objprof::ir::elim_test {
namespace {

struct Case {
  const char* file;
  PassKind pass;
  SafepointMode safepoints;
  const char* suffix;
};

const Case kCases[] = {
    {"straight_line", PassKind::kPaper, SafepointMode::kExact, "paper"},
    {"straight_line", PassKind::kGlobal, SafepointMode::kExact, "global"},
    {"fig4b", PassKind::kPaper, SafepointMode::kExact, "paper"},
    {"fig4b", PassKind::kGlobal, SafepointMode::kExact, "global"},
    {"fig4c", PassKind::kPaper, SafepointMode::kExact, "paper"},
    {"fig4c", PassKind::kGlobal, SafepointMode::kExact, "global"},
    {"diamond", PassKind::kPaper, SafepointMode::kExact, "paper"},
    {"diamond", PassKind::kGlobal, SafepointMode::kExact, "global"},
    {"loop_reassign", PassKind::kPaper, SafepointMode::kExact, "paper"},
    {"loop_reassign", PassKind::kGlobal, SafepointMode::kExact, "global"},
    {"irreducible", PassKind::kPaper, SafepointMode::kExact, "paper"},
    {"irreducible", PassKind::kGlobal, SafepointMode::kExact, "global"},
    {"safepoint", PassKind::kPaper, SafepointMode::kExact, "paper"},
    {"safepoint", PassKind::kGlobal, SafepointMode::kExact, "global"},
    {"safepoint", PassKind::kPaper, SafepointMode::kPaper, "paper-safepoints-paper"},
    {"safepoint", PassKind::kGlobal, SafepointMode::kPaper, "global-safepoints-paper"},
    {"unreachable", PassKind::kPaper, SafepointMode::kExact, "paper"},
    {"unreachable", PassKind::kGlobal, SafepointMode::kExact, "global"},
    {"unreachable", PassKind::kNone, SafepointMode::kExact, "none"},
};

TEST_CASE("Elimination: annotated output of every hand-written CFG", "[ir]") {
  const bool update = std::getenv("OBJPROF_UPDATE_EXPECTED") != nullptr;
  for (const Case& c : kCases) {
    std::string input = std::string(c.file) + ".ir";
    std::string expected_name = std::string(c.file) + "." + c.suffix + ".expected";
    INFO(expected_name);
    Module m = test::parse_or_die(test::read_file(test::data_path(input)), input);
    ElimOptions o;
    o.pass = c.pass;
    o.safepoints = c.safepoints;
    std::string got = test::annotated(m, o);
    if (update) std::ofstream(test::data_path(expected_name), std::ios::binary) << got;
    CHECK(got == test::read_file(test::data_path(expected_name)));
    // Every annotated output is itself valid IR text (annotations are comments) and every
    // decision passes the checker under its safepoint contract.
    auto again = parse_module(got, expected_name);
    REQUIRE(again.ok());
    CHECK(*again == m);
    for (const Function& f : m.functions) {
      auto r = run_elim(f, o, &m);
      REQUIRE(r.ok());
      CheckReport report = check_function(f, *r, check_options_for(*r, 300, 11));
      INFO(f.name);
      CHECK(report.ok());
    }
  }
}

// The decision for the access with site `site` (first operand).
const AccessDecision& site_decision(const ElimResult& r, SiteId site) {
  for (const AccessDecision& d : r.accesses) {
    if (d.site == site) return d;
  }
  throw std::runtime_error("no such site");
}

ElimResult run_on(const std::string& file, const std::string& func, PassKind pass,
                  SafepointMode sp = SafepointMode::kExact) {
  static std::vector<std::unique_ptr<Module>> modules;  // keep functions alive for the test
  modules.push_back(std::make_unique<Module>(test::parse_or_die(test::read_file(test::data_path(file)), file)));
  for (const Function& f : modules.back()->functions) {
    if (f.name == func) {
      ElimOptions o;
      o.pass = pass;
      o.safepoints = sp;
      auto r = run_elim(f, o, modules.back().get());
      if (!r) throw std::runtime_error(r.error().message);
      return std::move(r).value();
    }
  }
  throw std::runtime_error("no such function");
}

TEST_CASE("Elimination: labelled negative cases keep their barrier", "[ir]") {
  for (PassKind pass : {PassKind::kPaper, PassKind::kGlobal}) {
    INFO(pass_name(pass));
    // negative test - only one arm of the diamond accesses v1.
    CHECK(site_decision(run_on("diamond.ir", "one_arm", pass), 2).kept);
    // negative test - v0 is reassigned in the loop body, so the header's access is new.
    CHECK(site_decision(run_on("loop_reassign.ir", "walk", pass), 3).kept);
    // negative test - on b->a, v1 holds the fresh value loaded by #4.
    CHECK(site_decision(run_on("irreducible.ir", "irreducible", pass), 2).kept);
    // negative test - a GC may run between #1 and #2 (exact safepoints).
    CHECK(site_decision(run_on("safepoint.ir", "middle", pass), 2).kept);
    // negative test - a GC may run in the left arm before the join.
    CHECK(site_decision(run_on("safepoint.ir", "arm", pass), 3).kept);
    // negative test - Fig. 4(a): after c(v5) the next a(v5) is recorded again.
    CHECK(site_decision(run_on("straight_line.ir", "straight", pass), 4).kept);
    // an unreachable block keeps its barriers.
    const ElimResult unreachable = run_on("unreachable.ir", "unreachable", pass);
    const AccessDecision& dead = site_decision(unreachable, 4);
    CHECK(dead.kept);
    CHECK(dead.reason == Reason::kUnreachable);
  }
}

TEST_CASE("Elimination: the paper pass names the dominating site", "[ir]") {
  ElimResult r = run_on("fig4c.ir", "fig4c", PassKind::kPaper);
  const AccessDecision& d = site_decision(r, 4);
  CHECK_FALSE(d.kept);
  CHECK(d.reason == Reason::kDominated);
  CHECK(d.because == 2);
  CHECK(describe(d) == "removed (dominated by #2)");
  // Fig. 4(c): b, c and e keep theirs.
  CHECK(site_decision(r, 2).kept);
  CHECK(site_decision(r, 3).kept);
  CHECK(site_decision(r, 5).kept);
}

TEST_CASE("Elimination: global beats paper on diamonds, copies and irreducible loops", "[ir]") {
  CHECK(site_decision(run_on("diamond.ir", "both_arms", PassKind::kPaper), 3).kept);
  CHECK_FALSE(site_decision(run_on("diamond.ir", "both_arms", PassKind::kGlobal), 3).kept);
  CHECK(site_decision(run_on("diamond.ir", "phi_arms", PassKind::kPaper), 5).kept);
  CHECK_FALSE(site_decision(run_on("diamond.ir", "phi_arms", PassKind::kGlobal), 5).kept);
  CHECK(site_decision(run_on("loop_reassign.ir", "walk", PassKind::kPaper), 4).kept);
  CHECK_FALSE(site_decision(run_on("loop_reassign.ir", "walk", PassKind::kGlobal), 4).kept);
  CHECK(site_decision(run_on("irreducible.ir", "irreducible", PassKind::kPaper), 3).kept);
  CHECK_FALSE(site_decision(run_on("irreducible.ir", "irreducible", PassKind::kGlobal), 3).kept);
}

TEST_CASE("Elimination: paper safepoints remove across a GC, and the exact checker sees it", "[ir]") {
  Module m = test::parse_or_die(test::read_file(test::data_path("safepoint.ir")), "safepoint.ir");
  const Function& middle = m.functions[0];
  ElimOptions o;
  o.pass = PassKind::kPaper;
  o.safepoints = SafepointMode::kPaper;
  auto r = run_elim(middle, o, &m);
  REQUIRE(r.ok());
  CHECK_FALSE(site_decision(*r, 2).kept);
  // Under its own contract (no GC) it is sound...
  CHECK(check_function(middle, *r, check_options_for(*r, 200, 3)).ok());
  // ...but a machine that does collect at safepoints catches the stale mark.
  CheckOptions exact;
  exact.paths = 200;
  CheckReport report = check_function(middle, *r, exact);
  REQUIRE_FALSE(report.ok());
  CHECK(report.violation->site == 2);
  CHECK(format_violation(middle, *report.violation).find("path: entry [gc]") != std::string::npos);
}

}  // namespace
}  // namespace objprof::ir

namespace objprof::ir::elim_test {
namespace {

TEST_CASE("Elimination: degenerate functions (no registers, no accesses, all dead)", "[ir]") {
  const char* text =
      "type T { r: ref }\n"
      "func empty() regs 0 {\n"
      "entry:\n"
      "  ret\n"
      "}\n"
      "func dead(v0) {\n"
      "entry:\n"
      "  ret\n"
      "x:\n"
      "  monitorenter v0 #1\n"
      "  goto x\n"
      "}\n";
  Module m = test::parse_or_die(text, "degenerate");
  for (PassKind pass : {PassKind::kNone, PassKind::kPaper, PassKind::kGlobal}) {
    for (const Function& f : m.functions) {
      ElimOptions o;
      o.pass = pass;
      auto r = run_elim(f, o, &m);
      REQUIRE(r.ok());
      CHECK(r->num_removed() == 0);
      CHECK(check_function(f, *r, CheckOptions{}).ok());
    }
  }
}

}  // namespace
}  // namespace objprof::ir
