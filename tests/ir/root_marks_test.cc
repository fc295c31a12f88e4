// The root-marks model (ElimOptions::roots_marked, docs/elimination.md "Safepoint models"):
// every GC marks the objects its frames' live registers hold, so GC points end no availability.
// The pass must use exactly that, and the checker must hold a VM to it: a machine that collects
// without marking roots catches the decisions, and root marks do not cover what a register did
// not hold at the GC (a reference loaded afterwards).
#include <catch2/catch.hpp>

#include "ir_test_util.h"
#include "objprof/ir/checker.h"
#include "objprof/ir/elim.h"
#include "objprof/ir/generate.h"

namespace objprof::ir::root_marks_test {
namespace {

// #2 follows a safepoint and a call that may GC; #4 reads a reference loaded after the GC.
constexpr const char* kAcrossGc = R"(
type Node { next: ref, value: int }
func across(v0, v1) regs 6 {
entry:
  v2 = getfield v0, Node.value #1
  safepoint
  v3 = call Node.work(v1)
  v2 = getfield v0, Node.value #2
  v4 = getfield v0, Node.next #3
  br v2, more, done
more:
  v5 = new Node
  v2 = getfield v4, Node.value #4
  v2 = getfield v0, Node.value #5
  goto done
done:
  ret v2
}
)";

ElimResult run_global(const Function& f, bool roots_marked) {
  ElimOptions o;
  o.roots_marked = roots_marked;
  o.self_check = true;
  auto r = run_elim(f, o);
  REQUIRE(r.ok());
  return std::move(r).value();
}

const AccessDecision& site(const ElimResult& r, SiteId s) {
  for (const AccessDecision& d : r.accesses)
    if (d.site == s) return d;
  FAIL("no site #" << s);
  return r.accesses.front();
}

TEST_CASE("root marks: GC points end no availability, and the checker holds the VM to marking its roots",
          "[ir][elim]") {
  Module m = test::parse_or_die(kAcrossGc, "across.ir");
  const Function& f = m.functions[0];

  const ElimResult exact = run_global(f, false);
  CHECK(site(exact, 2).kept);  // a safepoint and a call since #1
  CHECK(site(exact, 5).kept);  // an allocation since #1
  CHECK_FALSE(exact.roots_marked);

  const ElimResult roots = run_global(f, true);
  CHECK(roots.roots_marked);
  CHECK(site(roots, 1).kept);
  CHECK_FALSE(site(roots, 2).kept);  // v0 is live across both GC points: the GC marked it
  CHECK(site(roots, 2).because == 1);
  CHECK_FALSE(site(roots, 5).kept);
  CHECK(site(roots, 4).kept);  // v4 is a new value: nothing covers it
  CHECK(roots.num_removed() > exact.num_removed());

  // A VM that keeps the promise: no violation on many paths, with GCs at most GC points.
  CheckOptions keeps = check_options_for(roots, 500, 3);
  CHECK(keeps.roots_marked);
  keeps.gc_percent = 60;
  const CheckReport ok = check_function(f, roots, keeps);
  if (!ok.ok()) FAIL(format_violation(f, *ok.violation));
  CHECK(ok.gcs > 0);

  // A VM that collects without marking its roots: the access after the GC is unmarked.
  CheckOptions no_roots = keeps;
  no_roots.roots_marked = false;
  const CheckReport caught = check_function(f, roots, no_roots);
  REQUIRE_FALSE(caught.ok());
  CHECK((caught.violation->site == 2 || caught.violation->site == 5));

  // Root marks cover registers, not the heap: removing #4 (a reference loaded after the GC,
  // which no register held when it ran) is caught even on a machine that marks roots.
  ElimResult wrong = roots;
  for (AccessDecision& d : wrong.accesses)
    if (d.site == 4) d.kept = false;
  const CheckReport loaded = check_function(f, wrong, keeps);
  REQUIRE_FALSE(loaded.ok());
  CHECK(loaded.violation->site == 4);
}

TEST_CASE("root marks: sound on generated CFGs, never weaker than exact, and unsound without the marks", "[ir][elim][single-threaded]") {
  const int per_shape = test::scaled(300);
  const std::uint32_t paths = static_cast<std::uint32_t>(test::scaled(25));
  std::size_t exact_removed = 0, roots_removed = 0, caught = 0;
  for (int shape = 0; shape < 3; ++shape) {
    for (int i = 0; i < per_shape; ++i) {
      GenOptions o;
      o.shape = static_cast<CfgShape>(shape);
      o.blocks = 2 + static_cast<std::uint32_t>((i * 11) % 40);
      o.regs = 2 + static_cast<std::uint32_t>(i % 7);
      o.safepoint_percent = 6 + static_cast<std::uint32_t>(i % 4) * 6;
      o.reassign_percent = 10 + static_cast<std::uint32_t>(i % 5) * 12;
      const std::uint64_t seed = 900000 + static_cast<std::uint64_t>(shape) * 10000 + static_cast<std::uint64_t>(i);
      Function f = generate_function(seed, o);
      f.has_receiver = i % 3 == 0 && !f.params.empty();
      INFO("shape " << shape << " seed " << seed << "\n" << print_function(f));
      REQUIRE(verify_function(f).ok());
      ElimOptions eo;
      eo.self_check = true;
      eo.allocation_marks = eo.receiver_marked = i % 2 == 0;
      auto exact = run_elim(f, eo);
      eo.roots_marked = true;
      auto roots = run_elim(f, eo);
      REQUIRE((exact.ok() && roots.ok()));
      REQUIRE(exact->accesses.size() == roots->accesses.size());
      for (std::size_t k = 0; k < exact->accesses.size(); ++k)
        REQUIRE((exact->accesses[k].kept || !roots->accesses[k].kept));  // only more removed
      CheckOptions co = check_options_for(*roots, paths, seed + 1);
      REQUIRE(co.roots_marked);
      const CheckReport report = check_function(f, *roots, co);
      if (!report.ok()) FAIL(format_violation(f, *report.violation));
      exact_removed += exact->num_removed();
      roots_removed += roots->num_removed();
      co.roots_marked = false;
      caught += check_function(f, *roots, co).ok() ? 0 : 1;
    }
  }
  INFO("removed: exact " << exact_removed << ", root marks " << roots_removed << "; caught without marks " << caught);
  CHECK(roots_removed > exact_removed + exact_removed / 10);
  CHECK(caught > 0);
}

}  // namespace
}  // namespace objprof::ir
