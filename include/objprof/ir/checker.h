// The soundness checker: an interpreter that runs a function along many random paths and
// proves, for each run, that every object accessed is marked in the current GC epoch at the
// moment of its access, executing only the barriers a pass kept.
//
// Model (docs/elimination.md):
//  - Branch directions are random, so every CFG path can be taken (data never steers).
//  - Registers hold null, a scalar, or an object id. On entry every register holds a random
//    object from a small pool of "external" objects (or rarely null / a scalar); loads, calls
//    and invokes return random objects (pool + every object allocated so far); `new` returns a
//    fresh object. Identities are random, so registers alias and differ unpredictably.
//  - A barrier is the seeds' sequence: if obj != cache { cache = obj; mark(obj) }.
//  - At every instruction that may GC, a GC happens with probability `gc_percent` (when
//    `gc_at_safepoints`): the bitmap and the cache are cleared and a new epoch starts. With a
//    CallResolver, calls run their callees' GC points instead (see CheckOptions::calls).
//  - With `allocation_marks`, `new` marks the fresh object; with `receiver_marked`, the
//    receiver of a function that has one holds an object that is marked on entry; with
//    `roots_marked`, a GC marks the objects of the registers live across its GC point (the
//    checker's own liveness: used later on some path, not redefined by the instruction).
//  - After each access to an object, its bit must be set; otherwise that is a violation.
// The first violation is shrunk (loops cut out of the path, unneeded GCs dropped, as long as a
// violation remains) and reported as a path of blocks.
// Deterministic for a given seed on every platform (own PRNG, no std distributions).
#pragma once

#include "objprof/ir/call_resolver.h"
#include "objprof/ir/elim.h"
#include "objprof/ir/function_shape.h"
#include "objprof/ir/ir.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace objprof::ir {

struct CheckOptions {
  std::uint32_t paths = 100;
  std::uint64_t seed = 1;
  std::uint32_t max_steps = 0;        // blocks per path; 0 = 4 * blocks + 16, at most 100000
  bool gc_at_safepoints = true;       // false: the machine never collects (paper safepoints)
  std::uint32_t gc_percent = 30;      // chance that a safepoint collects
  std::uint32_t external_objects = 6; // size of the pool of objects the caller provides
  bool minimize = true;
  // The VM guarantees the decisions assumed (ElimResult, ElimOptions): the allocator marks new
  // objects; the receiver is marked on entry (the caller's invoke accessed it).
  bool allocation_marks = false;
  bool receiver_marked = false;
  // Each GC marks, in the epoch it starts, the objects held by the registers live across the GC
  // point: live after the instruction, minus the register it defines (a GC inside a call or
  // an allocation runs before the result exists). Only the checked function's frame: callees
  // run for their GC points alone.
  bool roots_marked = false;
  // The decisions claim the function returns marked objects (ElimResult::returns_marked): each
  // return of an object must find it marked, or that is a violation (site kNoSite). Calls
  // written `.marked` mark the object they return (their callees were checked this way).
  bool verify_returns = false;
  // With a resolver, a call whose callees it knows runs them along a random path (GCs at their
  // GC points, nested calls in turn, up to `call_depth` deep and `callee_budget` instructions
  // per call in the function checked) whatever its `.nogc` flag says; other calls follow
  // their flag. Without one, every call follows its flag.
  const CallResolver* calls = nullptr;
  std::uint32_t call_depth = 32;
  std::uint32_t callee_budget = 512;
};

struct PathStep {
  BlockId block;
  bool gc = false;  // a GC ran in this block on this step
};

struct Violation {
  BlockId block;
  std::uint32_t instr;
  unsigned operand;
  SiteId site;  // kNoSite: a return whose object should have been marked (verify_returns)
  Reg reg;
  std::uint64_t object;
  std::uint64_t epoch;
  std::vector<PathStep> path;  // entry ... block of the violating access
};

struct CheckReport {
  std::uint64_t paths = 0;
  std::uint64_t steps = 0;
  std::uint64_t accesses = 0;  // object accesses checked
  std::uint64_t barriers = 0;  // kept barriers executed
  std::uint64_t gcs = 0;
  std::optional<Violation> violation;
  bool ok() const { return !violation.has_value(); }
};

// `decisions` must come from a pass run on `f` (or make_all_kept(f)); `f` must verify.
CheckReport check_function(const Function& f, const ElimResult& decisions, const CheckOptions& options);

// The same checker on a VM's own description of a function (the front door): no opcodes,
// only what the shape says. A definition that is neither a copy nor an allocation holds a
// random object; kMayGc instructions may collect after their accesses; kAllocates ones hand
// out a fresh object after any GC; kResultMarked ones a marked one; kReturns ends the run
// (its object checked under verify_returns). Calls have no callees here: `calls` is ignored.
// `decisions` must come from the global pass (or make_all_kept) on `shape`.
CheckReport check_shape(const FunctionShape& shape, const ElimResult& decisions, const CheckOptions& options);

// "site #7 (block b3, v2): object o12 not marked in epoch 1; path: entry -> b1 [gc] -> b3"
std::string format_violation(const Function& f, const Violation& v);
// A shape's blocks have no names: "site #7 (block 3, r2): ...; path: 0 -> 1 [gc] -> 3"
std::string format_violation(const Violation& v);

// Checker options matching a pass's safepoint contract: exact passes are checked with GCs at
// safepoints, paper-mode passes without.
CheckOptions check_options_for(const ElimResult& decisions, std::uint32_t paths, std::uint64_t seed);

}  // namespace objprof::ir
