// Barrier elimination on Lua 5.4 bytecode: each prototype Lua loads (parsed or undumped) is
// described to objprof's global pass through its VM-agnostic front door (FunctionShapeBuilder),
// and the table accesses the pass removes are rewritten to barrier-free variants of their
// opcodes (OP_GETFIELD -> OP_GETFIELD_NB, ...; objprof-hooks.patch). Saved bytecode holds only
// standard opcodes (ldump.c maps them back).
//
// What the pass may assume, and what objprof-lua does to make it true (docs/embedding.md):
// - Root marks (ElimOptions::roots_marked): atomic() marks every object in a live frame's
//   registers, and what its closure's upvalues hold, in the epoch it starts (on_stackroots, from
//   traversethread; a suspended coroutine's at its resume), so a metamethod, a finalizer, a
//   hook or a call that runs the collector ends no availability.
// - Registers change only where the bytecode says so, or by a write that marks what it writes:
//   SETUPVAL into an open upvalue, lua_setupvalue, lua_setlocal (on_framewrite). Copies are not
//   trusted (a MOVE defines a new value): another frame may write one register of a pair.
// - A closure's upvalues are registers after the frame's: OP_GETTABUP/OP_SETTABUP (mostly
//   _ENV, the globals) access them, OP_SETUPVAL defines them. Other writes mark what they write
//   (SETUPVAL from another closure, lua_setupvalue, lua_upvaluejoin), except one: the frame that
//   owns an open upvalue writing its own local, which needs another thread to run while the
//   closure's frame waits. So a thread that runs again after others (lua_resume's entry for
//   the resumed thread, its exit for the resumer) marks what its frames' upvalues hold.
// - Allocation marks (ElimOptions::allocation_marks): the allocation hook marks every new
//   table (objprof_lua.cc, on_newobj), so OP_NEWTABLE's table is available at once.
#pragma once

#include <objprof/ir/analysis.h>
#include <objprof/ir/elim.h>
#include <objprof/ir/function_shape.h>
#include <objprof/result.h>

#include <cstdint>
#include <vector>

struct Proto;

namespace objprof_lua {

struct ElimStats {
  std::uint64_t protos = 0;
  std::uint64_t instructions = 0;
  std::uint64_t sites = 0;          // table-access sites described to the pass
  std::uint64_t rewritten = 0;      // of them, rewritten to a barrier-free opcode
  std::uint64_t removed_exact = 0;  // what the pass removes without root marks (statistics only)
  std::uint64_t failed = 0;         // prototypes left as they were (the shape did not verify)
  // The static checker (objprof::ir::check_shape) on each prototype's decisions, when asked.
  std::uint64_t checked = 0;            // prototypes checked
  std::uint64_t check_accesses = 0;     // accesses its random runs checked
  std::uint64_t check_violations = 0;   // prototypes with a violation
};

// The shape of one prototype's code. Sites are pcs. Exposed for tests and statistics.
objprof::Result<objprof::ir::FunctionShape> describe_proto(const Proto* p);

class ProtoEliminator {
 public:
  // `also_exact`: run the pass a second time without the root-mark promise, for statistics.
  // `check_paths`: run the static checker on each prototype's decisions along this many random
  // paths (0: not at all).
  ProtoEliminator(bool also_exact, std::uint32_t check_paths) : also_exact_(also_exact), check_paths_(check_paths) {}
  // Runs the pass over `p` and every prototype nested in it and rewrites what it removes.
  void run(Proto* p);
  const ElimStats& stats() const noexcept { return stats_; }

 private:
  void run_one(Proto* p);
  bool also_exact_;
  std::uint32_t check_paths_;
  objprof::ir::FunctionAnalyses analyses_;  // reused from prototype to prototype
  objprof::ir::ElimResult result_;
  ElimStats stats_;
};

}  // namespace objprof_lua
