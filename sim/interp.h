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

#include <objprof/barrier.h>
#include <objprof/ir/elim.h>
#include <objprof/ir/ir.h>
#include <objprof/profiler.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace objprof::sim {

struct InterpOptions {
  ir::PassKind pass = ir::PassKind::kNone;
  BarrierConfig barrier{};
  std::uint64_t size = 1000;   // sys.param()
  std::uint64_t seed = 1;      // sys.rand()
  std::uint32_t threads = 1;
  std::uint32_t max_depth = 2000;
  std::string module_name = "module";  // prefix of thread names
  std::function<void(std::uint32_t thread, std::int64_t value)> on_progress;
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

  InterpStats stats() const;
  const InterpOptions& options() const { return options_; }

  struct Impl;

 private:
  explicit Interpreter(std::unique_ptr<Impl> impl, InterpOptions options);
  std::unique_ptr<Impl> impl_;
  InterpOptions options_;
};

}  // namespace objprof::sim
