// The paper's Fig. 6 ladder on the simulated runtime, interpreter mode: every workload run
// without objprof and with the barrier at each rung, side by side in one run.
//
//   no-barriers  no profiler at all: no barrier, no hooks (the baseline)
//   none         profiler on, a barrier at every access site, no cache (pass none)
//   caching      every access site, with the last-accessed-object cache
//   elim         the global elimination pass, no cache
//   all          global pass and cache (what objprof run uses by default)
//   all-atomic   the same with atomic marks (a locked fetch-or per mark)
//   all-buffered the same with buffered marks (no mark lost, no locked instruction per mark)
//
// One iteration is one complete run of the workload's `main`, timed in process CPU time
// (support/ladder.h says how). Sizes are the workloads' defaults scaled down so one run takes
// tens of ms. After the runs a table prints each rung's time relative to no-barriers, and the
// geomean.
#include "support/bench_main.h"
#include "support/steady_memory.h"
#include "support/ladder.h"

#include <vector>

namespace {

using objprof::bench::LadderRung;
using objprof::ir::PassKind;

const std::vector<LadderRung> kRungs = {
    {"no-barriers", false, false, PassKind::kNone, false},
    {"none", true, true, PassKind::kNone, false},
    {"caching", true, true, PassKind::kNone, true},
    {"elim", true, true, PassKind::kGlobal, false},
    {"all", true, true, PassKind::kGlobal, true},
    {"all-atomic", true, true, PassKind::kGlobal, true, false, objprof::MarkMode::kAtomic},
    {"all-buffered", true, true, PassKind::kGlobal, true, false, objprof::MarkMode::kBuffered},
};

// Default sizes divided so that one run is short; threads runs two mutators.
const std::vector<objprof::bench::LadderWorkload> kWorkloads = {
    {"listleak", 1000, 1}, {"swapleak", 1000, 1}, {"points", 300, 1},
    {"scimark", 48, 1},    {"graph", 300, 1},     {"threads", 200, 2},
};

void register_all() { objprof::bench::register_ladder("bench_sim_ladder", "ladder", kWorkloads, kRungs, nullptr); }

}  // namespace

int main(int argc, char** argv) {
  objprof::bench::keep_freed_memory_mapped();  // support/steady_memory.h
  return objprof::bench::run_benchmarks(argc, argv, register_all,
                                        {{"ladder", "no-barriers", {"none", "caching", "elim", "all", "all-atomic", "all-buffered"}, false, "process CPU", "min"}});
}
