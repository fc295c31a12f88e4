// A collector loop compiled once per way of reporting to the profiler: a run-time mode (none,
// each object, runs of objects) becomes a compile-time one, so the loop that reports nothing
// (no profiler) or each object carries no test of the others per object. Shared by the death
// reports (free_runs.h) and the move reports (move_runs.h), whose enums have these three modes.
#pragma once

#include <type_traits>

namespace objprof::sim {

// fn(std::integral_constant<Mode, mode>{}) for the run-time `mode` (an enum with kNone, kEach
// and kRuns).
template <class Mode, class Fn>
decltype(auto) with_report_mode(Mode mode, Fn&& fn) {
  switch (mode) {
    case Mode::kEach: return fn(std::integral_constant<Mode, Mode::kEach>{});
    case Mode::kRuns: return fn(std::integral_constant<Mode, Mode::kRuns>{});
    case Mode::kNone: break;
  }
  return fn(std::integral_constant<Mode, Mode::kNone>{});
}

}  // namespace objprof::sim
