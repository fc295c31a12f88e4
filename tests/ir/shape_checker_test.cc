// check_shape: the soundness checker on a VM's own description of a function (the front door).
// On random functions it agrees with the IR checker: the global pass's decisions pass both,
// under every safepoint model and promise; decisions made wrong on purpose fail both. On a
// hand-made shape it finds a GC between two accesses exactly where the pass would have to keep
// a barrier, and accepts it under root marks.
#include <catch2/catch.hpp>

#include "ir_test_util.h"
#include "objprof/ir/analysis.h"
#include "objprof/ir/checker.h"
#include "objprof/ir/elim.h"
#include "objprof/ir/function_shape.h"
#include "objprof/ir/generate.h"

#include <string>

namespace objprof::ir::shape_checker_test {
namespace {

using Flag = FunctionShape::Flag;

ElimResult global_pass(const FunctionShape& shape, const ElimOptions& options) {
  FunctionAnalyses am(shape);
  ElimResult r;
  GlobalElimPass(options).run(am, &r);
  return r;
}

TEST_CASE("check_shape: the global pass's decisions pass, as they pass the IR checker", "[ir][shape][checker][single-threaded]") {
  const int per_shape = test::scaled(40);
  std::uint64_t accesses = 0, gcs = 0, removed = 0;
  auto tune = [](int i, GenOptions& g) {
    g.blocks = 2 + static_cast<std::uint32_t>((i * 29) % 120);
    g.regs = 2 + static_cast<std::uint32_t>(i % 12);
  };
  test::for_each_generated(per_shape, 9100, tune, [&](int shape_kind, int i, Function& f) {
    f.has_receiver = i % 3 == 0 && !f.params.empty();
    const FunctionShape shape = shape_of(f);
    for (int model = 0; model < 4; ++model) {
      ElimOptions o;
      o.safepoints = model == 1 ? SafepointMode::kPaper : SafepointMode::kExact;
      o.allocation_marks = o.receiver_marked = model >= 2;
      o.roots_marked = model == 3;
      Result<ElimResult> r = run_elim(f, o);
      REQUIRE(r.ok());
      removed += r->num_removed();
      const CheckOptions co = check_options_for(*r, 40, 17 + static_cast<std::uint64_t>(i));
      INFO("shape " << shape_kind << " function " << i << " model " << model);
      const CheckReport on_shape = check_shape(shape, *r, co);
      if (!on_shape.ok()) FAIL(format_violation(*on_shape.violation));
      CHECK(check_function(f, *r, co).ok());
      accesses += on_shape.accesses;
      gcs += on_shape.gcs;
    }
  });
  // The runs were not vacuous: they accessed objects, collected, and the pass removed barriers.
  CHECK(accesses > 1000);
  CHECK(gcs > 100);
  CHECK(removed > 100);
}

TEST_CASE("check_shape: decisions made wrong on purpose fail, as they fail the IR checker", "[ir][shape][checker]") {
  const int per_shape = test::scaled(30);
  int caught_both = 0, tried = 0;
  auto tune = [](int i, GenOptions& g) { g.blocks = 4 + static_cast<std::uint32_t>((i * 13) % 60); };
  test::for_each_generated(per_shape, 9500, tune, [&](int, int, Function& f) {
    Result<ElimResult> r = run_elim(f, ElimOptions{});
    REQUIRE(r.ok());
    if (r->accesses.empty()) return;
    // Every barrier removed: the first access of an object nobody marked must be caught.
    ElimResult wrong = *r;
    for (AccessDecision& d : wrong.accesses) d.kept = false;
    ++tried;
    const CheckOptions co = check_options_for(*r, 60, 5);
    const CheckReport on_shape = check_shape(shape_of(f), wrong, co);
    const CheckReport on_ir = check_function(f, wrong, co);
    if (!on_shape.ok() && !on_ir.ok()) ++caught_both;
    if (!on_shape.ok()) {
      // The reported path is a real one: it starts at the entry and ends at the access.
      REQUIRE_FALSE(on_shape.violation->path.empty());
      CHECK(on_shape.violation->path.front().block == 0);
      CHECK(on_shape.violation->path.back().block == on_shape.violation->block);
    }
  });
  REQUIRE(tried > 10);
  CHECK(caught_both == tried);
}

// entry: r0 = new (#alloc); access r0 (#1); [gc point]; access r0 (#2); return
FunctionShape gc_between(bool with_gc) {
  FunctionShapeBuilder b(2);
  b.begin_block();
  b.add_instr(kNoReg, {0}, 0b1, 0, 1);
  if (with_gc) b.add_instr(kNoReg, {}, 0, Flag::kMayGc);
  b.add_instr(kNoReg, {0}, 0b1, 0, 2);
  b.add_instr(kNoReg, {0}, 0, Flag::kReturns);
  auto shape = std::move(b).finish();
  REQUIRE(shape.ok());
  return std::move(shape).value();
}

TEST_CASE("check_shape: a GC between two accesses needs the second barrier unless roots are marked", "[ir][shape][checker]") {
  CheckOptions co;
  co.paths = 200;
  co.gc_percent = 100;
  SECTION("without a GC point the pass removes #2 and the checker agrees") {
    const FunctionShape shape = gc_between(false);
    const ElimResult r = global_pass(shape, ElimOptions{});
    REQUIRE(r.accesses.size() == 2);
    CHECK_FALSE(r.accesses[1].kept);
    CHECK(check_shape(shape, r, co).ok());
  }
  const FunctionShape shape = gc_between(true);
  SECTION("with one, the pass keeps #2; removing it anyway is caught at #2 after the GC") {
    ElimResult r = global_pass(shape, ElimOptions{});
    REQUIRE(r.accesses.size() == 2);
    CHECK(r.accesses[1].kept);
    CHECK(check_shape(shape, r, co).ok());
    r.accesses[1].kept = false;
    const CheckReport report = check_shape(shape, r, co);
    REQUIRE_FALSE(report.ok());
    CHECK(report.violation->site == 2);
    CHECK(format_violation(*report.violation).find("site #2 (block 0, r0)") != std::string::npos);
    CHECK(format_violation(*report.violation).find("[gc]") != std::string::npos);
  }
  SECTION("under root marks the pass removes #2, sound only if the GC marks the frame's registers") {
    ElimOptions o;
    o.roots_marked = true;
    const ElimResult r = global_pass(shape, o);
    CHECK_FALSE(r.accesses[1].kept);
    CheckOptions roots = co;
    roots.roots_marked = true;
    CHECK(check_shape(shape, r, roots).ok());
    CHECK_FALSE(check_shape(shape, r, co).ok());  // a VM that broke the promise
  }
}

}  // namespace
}  // namespace objprof::ir
