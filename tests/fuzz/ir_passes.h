// Every elimination pass, and the path checker on its decisions, over each function of a
// module that verifies: the part of the IR targets shared by IR text and class files.
#pragma once

#include "fuzz_check.h"

#include <objprof/ir/analysis.h>
#include <objprof/ir/checker.h>
#include <objprof/ir/elim.h>
#include <objprof/ir/text.h>

namespace objprof::fuzz {

// One FunctionAnalyses for the whole fuzzing process, as a compiler thread keeps one.
inline ir::FunctionAnalyses& workspace() {
  static ir::FunctionAnalyses am;
  return am;
}

inline bool same_decisions(const ir::ElimResult& a, const ir::ElimResult& b) {
  return a.accesses == b.accesses && a.block_first == b.block_first && a.returns_marked == b.returns_marked;
}

inline void run_passes(const ir::Module& m) {
  for (const ir::Function& f : m.functions) {
    if (!verify_function(f, &m).ok()) continue;  // only verified functions reach the passes
    (void)ir::print_function(f);
    for (ir::PassKind pass : {ir::PassKind::kNone, ir::PassKind::kPaper, ir::PassKind::kGlobal}) {
      for (int variant = 0; variant < 6; ++variant) {
        const ir::SafepointMode mode = variant % 2 == 0 ? ir::SafepointMode::kExact : ir::SafepointMode::kPaper;
        // Variants 2 and 3 add the VM's promises (allocation marks, the receiver marked on
        // entry), 4 and 5 root marks too; the checker holds the decisions to them and to any
        // returns_marked claim.
        if (variant >= 2 && pass != ir::PassKind::kGlobal) continue;
        ir::ElimOptions o;
        o.pass = pass;
        o.safepoints = mode;
        o.allocation_marks = o.receiver_marked = variant >= 2;
        o.roots_marked = variant >= 4;
        o.paper_region_budget = 16;
        auto r = ir::run_elim(f, o, &m);
        if (!r.ok()) continue;
        // The same through a workspace that has analysed every function before this one (in
        // this input and in earlier ones): reuse must not change a decision.
        auto reused = ir::run_elim(f, o, &m, workspace());
        OBJPROF_FUZZ_CHECK(reused.ok() && same_decisions(*r, *reused));
        OBJPROF_FUZZ_CHECK(r->accesses.size() == ir::make_all_kept(f).accesses.size());
        for (const ir::AccessDecision& d : r->accesses) (void)ir::describe(d);
        // A few random paths: removed accesses must really be covered by an earlier one.
        const ir::CheckReport report = ir::check_function(f, *r, ir::check_options_for(*r, 4, 1));
        if (!report.ok()) {
          std::fprintf(stderr, "%s\n", ir::format_violation(f, *report.violation).c_str());
          OBJPROF_FUZZ_CHECK(report.ok());
        }
      }
    }
  }
}

}  // namespace objprof::fuzz
