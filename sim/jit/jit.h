// The JIT for IR methods: compiles the sim's decoded IR functions to native code with asmjit's
// Compiler (its register allocator maps IR registers to machine registers) and hands them to
// the interpreter as a sim::CodeGenerator (InterpOptions::jit). docs/jit.md describes the code.
//
//   auto jit = sim::jit::make_jit({});
//   sim::InterpOptions io; io.jit = jit;   // functions the JIT declines stay interpreted
//
// Supported: x86_64 (x86::Compiler) and arm64 (a64::Compiler). On other architectures every
// function is declined with "unsupported on this arch" and runs in the interpreter (mixed mode).
#pragma once

#include "backends/emit_config.h"
#include "sim/interp.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace objprof::sim::jit {

// Where compiled code lies, for tools that attribute executed instructions to it (the arm64
// instruction-count ladders, tools/jit_insn_ladder): a whole function, or one emitted barrier
// sequence (inline, so one range per kept site). Addresses are absolute, [begin, end).
struct CodeRange {
  enum class Kind : std::uint8_t { kFunction, kBarrier };
  Kind kind = Kind::kFunction;
  std::uint64_t begin = 0, end = 0;
  std::string function;
  std::uint32_t pc = 0;  // kBarrier: the decoded instruction whose operand it checks
};

struct JitOptions {
  // false: emit no access barrier at all (the "no barriers" baseline of the benchmark ladder;
  // the profile is then empty). true: a barrier at every access the elimination pass kept.
  bool barriers = true;
  // Where the barrier's last-accessed-object cache lives when the run's barrier has one: the
  // ThreadState field, or a register for the whole method (written back around every call).
  backends::CacheLocation cache = backends::CacheLocation::kThreadField;
  // Functions to leave to the interpreter (tests of mixed mode, bisecting).
  std::vector<std::string> interpret;
  // Keep asmjit's listing of every compiled function (see JitStats::listing).
  bool keep_listing = false;
  // When set, every compile() appends the range of each compiled function and of each barrier
  // sequence it emitted. The vector must outlive the generator's compiles; null (the default)
  // costs nothing.
  std::vector<CodeRange>* code_ranges = nullptr;
};

struct JitStats {
  std::uint32_t compiled = 0, interpreted = 0;
  std::uint64_t code_bytes = 0;
  std::string listing;  // with keep_listing
};

// True when this build can compile (x86_64, arm64).
bool jit_supported();

class Jit;
// A generator; keep it (InterpOptions holds a shared_ptr) while the interpreter runs its code.
std::shared_ptr<Jit> make_jit(JitOptions options = {});

class Jit : public sim::CodeGenerator {
 public:
  ~Jit() override;
  std::vector<sim::CompiledFunction> compile(const sim::CompileRequest& request) override;
  JitStats stats() const;

  struct Impl;

 private:
  friend std::shared_ptr<Jit> make_jit(JitOptions options);
  explicit Jit(JitOptions options);
  std::unique_ptr<Impl> impl_;
};

}  // namespace objprof::sim::jit
