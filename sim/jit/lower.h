// The per-architecture lowering of one decoded IR function (sim/jit/*_lower.cc), called by
// the JIT driver (jit.cc) with everything decided up front.
#pragma once

#include "jit.h"
#include "kinds.h"

#include "backends/emit_config.h"

#include "sim/interp.h"

#include <asmjit/core.h>

#include <cstdint>
#include <string>
#include <vector>

namespace objprof::sim::jit {

// Per heap type id: bit 0 = array, bit 1 = array of references (compiled checks read this
// table instead of the heap's type objects).
inline constexpr std::uint8_t kTypeIsArray = 1, kTypeRefElems = 2;

struct LowerInput {
  const sim::CompileRequest* request = nullptr;
  std::uint32_t fn = 0;                       // index of the function to compile
  const std::vector<FunctionKinds>* kinds = nullptr;
  const std::uint8_t* type_flags = nullptr;   // see kTypeIsArray
  bool barriers = true;                       // JitOptions::barriers and a profiler present
  backends::EmitterConfig barrier;            // the run's variant (backends/emit_config.h)
  asmjit::JitRuntime* runtime = nullptr;
  std::string* listing = nullptr;             // appended when non-null
  // JitOptions::code_ranges: a lowering that supports it appends one kBarrier range per barrier
  // it emits (the driver adds the function's range).
  std::vector<CodeRange>* code_ranges = nullptr;
};

struct Lowered {
  sim::CompiledFn entry = nullptr;
  std::uint64_t code_bytes = 0;
  std::string error;  // entry null: why
};

// JitOptions::code_ranges for the barriers of one function: labels bound around each emitted
// sequence, resolved to addresses once the function is placed. Only when the hook is set, so
// normal compiles keep their blocks exactly as before.
class BarrierMarks {
 public:
  explicit BarrierMarks(const LowerInput& in) : on_(in.code_ranges != nullptr), out_(in.code_ranges) {}
  // Brackets the sequence `emit` writes at decoded instruction `pc`.
  template <class Compiler, class Emit>
  void around(Compiler& cc, std::uint32_t pc, Emit&& emit) {
    if (!on_) {
      emit();
      return;
    }
    const asmjit::Label begin = cc.newLabel(), end = cc.newLabel();
    cc.bind(begin);
    emit();
    cc.bind(end);
    marks_.push_back({begin, end, pc});
  }
  // The function is one text section placed at `entry`, so a label's offset is from there.
  void resolve(const asmjit::CodeHolder& code, const void* entry, const std::string& function) const {
    if (!on_) return;
    const auto base = reinterpret_cast<std::uint64_t>(entry);
    for (const Mark& m : marks_)
      out_->push_back({CodeRange::Kind::kBarrier, base + code.labelOffset(m.begin), base + code.labelOffset(m.end),
                       function, m.pc});
  }

 private:
  struct Mark {
    asmjit::Label begin, end;
    std::uint32_t pc;
  };
  bool on_;
  std::vector<CodeRange>* out_;
  std::vector<Mark> marks_;
};

// The barrier variant of one site under the run's cache plan (sim/cache_plan.h): the run's
// own when it has no cache or the site compares; store-only, or no cache at all, otherwise.
inline backends::EmitterConfig site_config(const backends::EmitterConfig& run, CacheUse use) {
  backends::EmitterConfig cfg = run;
  if (!run.uses_cache() || use == CacheUse::kCompare) return cfg;
  if (use == CacheUse::kStore) {
    cfg.store_only = true;
    cfg.range_first = false;
  } else {
    cfg.cache = backends::CacheLocation::kNone;
    cfg.range_first = false;
  }
  return cfg;
}

// Does any kept barrier of the function use the cache under the plan? A pinned cache is
// loaded, written back around calls and stored only in functions where one does.
inline bool function_uses_cache(const std::vector<DecodedInstr>& code) {
  for (const DecodedInstr& d : code)
    for (unsigned o = 0; o < 2; ++o)
      if ((d.kept >> o & 1) && d.cache_use[o] != CacheUse::kNone) return true;
  return false;
}

Lowered lower_x86_64(const LowerInput& in);
Lowered lower_arm64(const LowerInput& in);

}  // namespace objprof::sim::jit
