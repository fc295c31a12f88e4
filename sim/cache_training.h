// The training run behind a cache plan (sim/cache_plan.h), as a tier-0 interpreter would give it.
#pragma once

#include "cache_plan.h"
#include "heap.h"
#include "interp.h"

#include <objprof/ir/ir.h>
#include <objprof/result.h>

namespace objprof::sim {

// Runs `entry` of `module` once, interpreted, on a heap (`heap`) and a profiler of its own,
// with InterpOptions::profile_cache, and returns the profile. `io` gives the pass, barrier,
// size, seed and threads; its jit and cache_plan are ignored; the profiler marks allocations
// when io.allocation_marks is set. Errors: the workload's own, or the heap's.
Result<CacheProfile> train_cache_profile(const ir::Module& module, const HeapOptions& heap, InterpOptions io,
                                         const std::string& entry = "main");

// The size of the training run for a run of `run_size`: half (at least 1), so the plan is made
// on another input than the one it is measured on, as a tier-0 interpreter sees only the start.
constexpr std::uint64_t training_size(std::uint64_t run_size) { return run_size / 2 > 0 ? run_size / 2 : 1; }

}  // namespace objprof::sim
