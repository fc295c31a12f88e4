// The sim's IR interpreter: runs objprof register-IR functions (docs/ir-format.md) on the sim
// heap, with the objprof access barrier on every access the chosen elimination pass kept.
//
// - Registers are tagged (scalar or reference) so the collectors find every root precisely;
//   each mutator thread's frames are its roots.
// - Allocation sites are the module's `new`/`newarray` instructions, defined with the
//   profiler as (function name, instruction index).
// - GCs happen only at instructions that may GC (allocation, `safepoint`, calls without
//   `.nogc`), which is what the elimination passes' exact safepoint mode assumes.
// - Builtins (static calls named sys.*): sys.param(), sys.rand(bound), sys.static_get(i),
//   sys.static_set(i, v), sys.static_init(i, v), sys.gc(), sys.check(cond), sys.thread(), sys.threads(),
//   sys.progress(v). See docs/sim.md.
// - `main` runs on every mutator thread; its parameters receive (size, thread, threads) in
//   that order, as many as it declares.
#pragma once

#include "heap.h"
#include "cache_plan.h"

#include <objprof/barrier.h>
#include <objprof/ir/elim.h>
#include <objprof/ir/ir.h>
#include <objprof/profiler.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace objprof::sim {

class CodeGenerator;

struct InterpOptions {
  ir::PassKind pass = ir::PassKind::kNone;
  // The global pass may assume that an allocation marks the new object in its epoch
  // (ir::ElimOptions::allocation_marks, docs/elimination.md "Safepoint models"): needs a
  // profiler created with ProfilerOptions::mark_on_alloc, whose on_alloc then marks it.
  bool allocation_marks = false;
  // The global pass may assume root marks (ir::ElimOptions::roots_marked): GC points end no
  // availability. Needs a heap created with HeapOptions::mark_frame_roots, whose collections
  // then mark every object the frames hold.
  bool roots_marked = false;
  BarrierConfig barrier{};
  std::uint64_t size = 1000;   // sys.param()
  std::uint64_t seed = 1;      // sys.rand()
  std::uint32_t threads = 1;
  std::uint32_t max_depth = 2000;
  std::string module_name = "module";  // prefix of thread names
  std::function<void(std::uint32_t thread, std::int64_t value)> on_progress;
  // Compiles the module's functions to native code (backends/jit); null: interpret everything.
  // Functions the generator declines run in the interpreter (mixed mode).
  std::shared_ptr<CodeGenerator> jit;
  // Record what the cache would do at every kept barrier site (sim/cache_plan.h), for
  // cache_profile(). Interpreted runs only (compiled code keeps no per-site counts).
  bool profile_cache = false;
  // Per-site cache use for runs whose barrier has a cache, followed by the interpreter and the
  // JIT alike; null: every kept site compares and stores. Must come from this module and pass
  // (its sites are checked).
  std::shared_ptr<const CachePlan> cache_plan;
};

struct InterpStats {
  std::uint64_t instructions = 0;
  std::uint64_t accesses = 0;           // object accesses executed
  std::uint64_t barriers_executed = 0;  // kept barriers run
  std::uint64_t barriers_elided = 0;    // accesses whose barrier the pass removed
  std::uint64_t static_sites = 0, static_kept = 0;  // over the module
};

class Interpreter {
 public:
  // Decodes `module`, runs the elimination pass on every function, defines the module's types
  // with the heap and its allocation sites with the profiler (may be null).
  static Result<std::unique_ptr<Interpreter>> create(const ir::Module& module, Heap& heap, Profiler* profiler,
                                                     InterpOptions options);
  ~Interpreter();

  // Runs `entry` on options.threads mutator threads (the calling thread is thread 0) and
  // returns thread 0's result (a scalar, or 0). The first error of any thread wins.
  Result<std::int64_t> run(const std::string& entry = "main");

  // Counters of interpreted code only: compiled code counts no instructions or accesses.
  InterpStats stats() const;
  const InterpOptions& options() const { return options_; }
  // What the cache would have done at each kept site over every run() so far (every kept site
  // comparing and storing); an error unless options().profile_cache.
  Result<CacheProfile> cache_profile() const;

  // How each function runs: compiled, or interpreted and why (`objprof run --verbose`).
  struct FunctionMode {
    std::string name;
    bool compiled = false;
    std::string reason;  // why it stays interpreted
  };
  std::vector<FunctionMode> function_modes() const;

  struct Impl;

 private:
  explicit Interpreter(std::unique_ptr<Impl> impl, InterpOptions options);
  std::unique_ptr<Impl> impl_;
  InterpOptions options_;
};

// --- The interface of compiled code (backends/jit) ---------------------------------------------
//
// Compiled code keeps IR registers in machine registers and uses the interpreter's frame (one
// Value per IR register, the GC roots the collectors scan) as its root slots: before anything that
// may GC it stores every register that may hold a reference there and reloads them afterwards.
// Everything that touches the runtime (allocation, calls, builtins, safepoints, error messages)
// goes through the rt:: functions below, which share the interpreter's code, so both modes
// behave the same.

// One IR register in a frame. Layout fixed for code generators: value at 0, tag byte at 8.
struct Value {
  std::uint64_t v = 0;
  bool ref = false;
};
static_assert(sizeof(Value) == 16 && offsetof(Value, v) == 0 && offsetof(Value, ref) == 8);

// One instruction, decoded once (field slots, type ids, callees, branch targets as linear pcs).
struct DecodedInstr {
  ir::Opcode op = ir::Opcode::kSafepoint;
  std::uint8_t sub = 0;
  std::uint8_t kept = 0;  // bit i: operand i keeps its barrier (the chosen pass's decision)
  // Per kept operand: its cache use (InterpOptions::cache_plan) and its site id in
  // CacheProfile/CachePlan.
  CacheUse cache_use[2] = {CacheUse::kCompare, CacheUse::kCompare};
  std::uint32_t site[2] = {0, 0};
  bool field_ref = false;
  ir::Reg dst = ir::kNoReg;
  ir::Reg a = ir::kNoReg, b = ir::kNoReg, c = ir::kNoReg;
  std::uint32_t slot = 0;
  std::uint32_t type = 0;        // field owner type / allocated type (heap type id)
  std::uint32_t alloc_site = 0;  // profiler site id
  std::int32_t callee = 0;       // >= 0: function index; < 0: a builtin
  std::int64_t imm = 0;
  std::uint32_t t0 = 0, t1 = 0;
  std::vector<std::uint32_t> targets;
  std::vector<ir::Reg> args;
  const ir::Instr* src = nullptr;
};

// Builtins a code generator needs to know about (result kinds); the rest return a scalar.
bool builtin_returns_tagged(std::int32_t callee);  // sys.static_get / sys.static_init

// Entry of a compiled function. `thread` is opaque (pass it to rt::*); `regs` is the frame with
// the parameters in place and every other register {0, false}; the result goes to *ret.
// Returns 0, or 1 when the run failed (the error is recorded on the thread).
using CompiledFn = std::uint32_t (*)(void* thread, Value* regs, Value* ret, ThreadState* ts);

struct CompileRequest {
  const ir::Module* module = nullptr;
  const Heap* heap = nullptr;
  const BarrierDescriptor* desc = nullptr;  // null: no profiler, so no barriers
  BarrierConfig barrier{};
  struct Function {
    const ir::Function* ir = nullptr;
    const std::vector<DecodedInstr>* code = nullptr;
  };
  std::vector<Function> functions;  // module order; function index = position
};

struct CompiledFunction {
  CompiledFn entry = nullptr;  // null: interpreted, `reason` says why
  std::string reason;
  // May the interpreter's run() enter it directly (its parameters accept the scalar
  // (size, thread, threads) arguments)? Otherwise a top-level run interprets it.
  bool entry_safe = false;
};

class CodeGenerator {
 public:
  virtual ~CodeGenerator() = default;
  // One result per function of `request`. The code must stay valid while the generator lives.
  virtual std::vector<CompiledFunction> compile(const CompileRequest& request) = 0;
};

// Runtime calls of compiled code: (thread, function index, pc) name the instruction; `regs` is
// the caller's frame, holding the instruction's operands. 0: ok; 1: the run failed (recorded).
namespace rt {
// new / newarray: writes the new object to regs[dst]. May GC.
std::uint32_t alloc(void* thread, std::uint32_t fn, std::uint32_t pc, Value* regs) noexcept;
// invoke / call (after the receiver's check and barrier): writes the result to regs[dst]. May GC
// unless `.nogc` (a `.nogc` callee that does GC is an error in compiled code: its caller's
// references were not in its root slots).
std::uint32_t call(void* thread, std::uint32_t fn, std::uint32_t pc, Value* regs) noexcept;
// safepoint: parks while another thread collects. May GC.
std::uint32_t safepoint(void* thread) noexcept;
// A check failed in compiled code: records the interpreter's error for this instruction.
std::uint32_t fail(void* thread, std::uint32_t fn, std::uint32_t pc, Value* regs) noexcept;
}  // namespace rt

}  // namespace objprof::sim
