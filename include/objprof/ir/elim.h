// Redundant-barrier elimination. Given a verified Function, a pass decides for every object
// access (an access instruction's accessed operand) whether the profiling barrier must be
// emitted or may be omitted because the same object is certainly already marked in the current
// GC epoch.
//
// Passes (LLVM new-PM shape: `bool run(const Function&, FunctionAnalyses&, ElimResult*)`
// returns whether any barrier was removed; the algorithm lives in the .cc):
//  - NoElimPass: keeps every barrier (the baseline).
//  - PaperElimPass: the paper's algorithm (seed 000, Fig. 3c / Fig. 4). One bit per register;
//    a block starts with its immediate dominator's final bits, minus registers merged by a phi
//    at the block; an access with the bit set needs no barrier, otherwise it keeps the barrier
//    and sets the bit; a definition clears the bit.
//  - GlobalElimPass: available accesses over all predecessors (a must-dataflow to a fixed point
//    on per-register facts "the object in r is marked"), with SSA copy roots so a `move` carries
//    availability and diamonds whose arms both access a value make the join's access redundant.
//    It removes every barrier the paper pass removes, and more.
//
// Safepoints (SafepointMode): a GC clears the bitmap and the thread's cache.
//  - kExact (default): availability ends at every instruction that may GC (allocation,
//    `safepoint`, calls without `.nogc`), so the profile is exact. For the paper pass this
//    also means a block does not inherit its dominator's bits if a GC may happen on some path
//    between them (checked by a bounded backward walk; beyond the bound, conservatively assumed).
//  - kPaper: safepoints are ignored, as in the paper (an object used across a GC may miss one
//    epoch's mark); the checker must then be run without GCs.
//
// Accesses in unreachable blocks always keep their barrier.
#pragma once

#include "objprof/ir/analysis.h"
#include "objprof/ir/ir.h"
#include "objprof/result.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace objprof::ir {

enum class PassKind : std::uint8_t { kNone, kPaper, kGlobal };
enum class SafepointMode : std::uint8_t { kExact, kPaper };

std::string_view pass_name(PassKind pass);
std::string_view safepoint_mode_name(SafepointMode mode);

struct ElimOptions {
  PassKind pass = PassKind::kGlobal;
  SafepointMode safepoints = SafepointMode::kExact;
  // Paper pass, exact mode: how many blocks the backward "is there a GC between my idom and
  // me" walk may visit before it gives up and assumes there is.
  std::uint32_t paper_region_budget = 256;
  // What the VM guarantees besides its GC points (docs/elimination.md, "Safepoint models");
  // the global pass uses them, the paper pass does not.
  //  - allocation_marks: the allocator marks each new object in the current epoch, after any
  //    GC the allocation ran (ProfilerOptions::mark_on_alloc), so an allocation counts as the
  //    new object's first access.
  //  - receiver_marked: a function with a receiver is entered only through an invoke whose
  //    receiver access ran (or was covered) in the same epoch, with no GC point between that
  //    access and the function's first instruction; the receiver is available on entry.
  //  - roots_marked: every collection marks, in the epoch it starts, each object that a
  //    reference slot of a frame live across the GC point holds (what a precise collector
  //    visits as stack roots anyway: Profiler::on_root). A value in a register survives a GC
  //    point still marked, so GC points end no availability (docs/elimination.md).
  bool allocation_marks = false;
  bool receiver_marked = false;
  bool roots_marked = false;
  // Global pass, for tests: recompute every block's exit facts from its final entry facts and
  // abort if they differ from those the fixed point stored (an objprof bug).
  bool self_check = false;
  // Global pass: the block order its analyses walk. kAuto runs the pass on a copy of the shape
  // laid out in reverse post-order (src/ir/block_layout.h) when the function is large enough
  // for its arrays to leave the caches (kLayoutMinInstrs instructions) and its RPO makes many
  // far steps (docs/elimination.md, "Block layout"); kAsGiven never does; kRpo does whenever
  // the blocks are not in RPO already. The decisions are the same in every mode; only the time
  // and the workspace's memory differ (the copy is ~26 bytes per instruction; its analyses
  // reuse the manager's arrays, which answer for the original again afterwards).
  enum class Layout : std::uint8_t { kAuto, kAsGiven, kRpo };
  Layout layout = Layout::kAuto;
  static constexpr std::size_t kLayoutMinInstrs = 1u << 16;
};

enum class Reason : std::uint8_t {
  kNoPass,            // kept: the `none` pass
  kUnreachable,       // kept: the block is unreachable
  kNotAvailable,      // kept: on some path the object may not be marked yet in this epoch
  kDominated,         // removed: an earlier access (`because`) to the same value dominates it
  kAvailableAllPaths, // removed: the value is accessed on every path since its definition and
                      // the last GC (global pass; `because` is set when one site covers all paths)
  kAllocated,         // removed: allocated after the last GC, and the allocator marked it
  kReceiver,          // removed: the receiver, which the caller's invoke accessed, before any GC
  kReturnedMarked     // removed: returned by a call whose callees return marked objects
};
std::string_view reason_name(Reason reason);

struct AccessDecision {
  BlockId block;
  std::uint32_t instr;    // index in the block
  std::uint8_t operand;   // accessed operand slot (0, or 1 for refeq's second operand)
  SiteId site;
  Reg reg;
  bool kept;
  Reason reason;
  SiteId because = kNoSite;  // the site whose barrier covers this access, if known

  bool operator==(const AccessDecision&) const = default;
};

struct ElimResult {
  PassKind pass = PassKind::kNone;
  SafepointMode safepoints = SafepointMode::kExact;
  bool allocation_marks = false;  // the assumptions the decisions rely on (ElimOptions)
  bool receiver_marked = false;
  bool roots_marked = false;
  // Global pass: the function returns a value and, at every reachable return, that value is
  // marked in the current epoch. Callers may then mark their calls `.marked` (JvmProgram does);
  // the checker verifies it at each return when it is set.
  bool returns_marked = false;
  std::vector<AccessDecision> accesses;  // in block, instruction, operand order
  std::vector<std::uint32_t> block_first;  // per block (+1 sentinel): first index in accesses

  std::size_t num_kept() const;
  std::size_t num_removed() const { return accesses.size() - num_kept(); }
  // The decision for one access, or nullptr if (block, instr, operand) is not an access.
  const AccessDecision* find(BlockId block, std::uint32_t instr, unsigned operand) const;
  bool kept(BlockId block, std::uint32_t instr, unsigned operand) const {
    const AccessDecision* d = find(block, instr, operand);
    return d == nullptr || d->kept;
  }
};

// Every access of `f`, all kept with Reason::kNoPass (the starting point of every pass).
ElimResult make_all_kept(const Function& f);
// The same for a shape: one decision per accessed operand, in instruction and operand order.
ElimResult make_all_kept(const FunctionShape& shape);
// The same into `out` (every field reset), reusing its arrays' storage.
void make_all_kept(const FunctionShape& shape, ElimResult& out);
// "kept (first access)", "removed: dominated by #3", ...
std::string describe(const AccessDecision& d);
// Text of one instruction's decisions for `print_function(..., {annotate})`: "" if it has no
// access, otherwise e.g. "barrier kept" or, for refeq, "v1: kept; v2: removed (dominated by #4)".
std::string annotate_instr(const ElimResult& result, BlockId block, std::uint32_t instr);

class NoElimPass {
 public:
  bool run(const Function& f, FunctionAnalyses& am, ElimResult* out);
};

class PaperElimPass {
 public:
  explicit PaperElimPass(ElimOptions options = {}) : options_(options) {}
  bool run(const Function& f, FunctionAnalyses& am, ElimResult* out);

 private:
  ElimOptions options_;
};

class GlobalElimPass {
 public:
  explicit GlobalElimPass(ElimOptions options = {}) : options_(options) {}
  bool run(const Function& f, FunctionAnalyses& am, ElimResult* out);
  // The same pass on whatever `am` was built from; reads only the function's shape, so a VM
  // that described its code with FunctionShapeBuilder gets its decisions without an ir::Function.
  bool run(FunctionAnalyses& am, ElimResult* out);

 private:
  ElimOptions options_;
};

// Verifies `f` (structurally; with `module`, also types and fields) and runs the pass chosen by
// `options.pass`. Errors: kInvalidArgument when `f` does not verify.
Result<ElimResult> run_elim(const Function& f, const ElimOptions& options, const Module* module = nullptr);
// The same with a caller's FunctionAnalyses, reset to `f`: a loop over many functions keeps one
// and the analyses reuse their arrays' storage from function to function.
Result<ElimResult> run_elim(const Function& f, const ElimOptions& options, const Module* module, FunctionAnalyses& workspace);

}  // namespace objprof::ir
