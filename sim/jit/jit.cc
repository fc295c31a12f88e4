// The JIT driver: infers register kinds over the module, builds the type table compiled checks
// read, and lowers each function for this architecture; what it cannot compile stays
// interpreted, with the reason (mixed mode).
#include "jit.h"

#include "kinds.h"
#include "lower.h"

#include <objprof/barrier.h>

#include <asmjit/core.h>

#include <algorithm>
#include <mutex>

namespace objprof::sim::jit {

using namespace objprof::backends;  // the barrier emitters (objprof_emit)

struct Jit::Impl {
  JitOptions options;
  asmjit::JitRuntime runtime;
  std::vector<std::vector<std::uint8_t>> type_tables;  // one per compile(); code points into it
  mutable std::mutex mu;
  JitStats stats;
};

bool jit_supported() {
#if defined(__x86_64__) || defined(__aarch64__)
  return true;
#else
  return false;
#endif
}

std::shared_ptr<Jit> make_jit(JitOptions options) { return std::shared_ptr<Jit>(new Jit(std::move(options))); }

Jit::Jit(JitOptions options) : impl_(std::make_unique<Impl>()) { impl_->options = std::move(options); }
Jit::~Jit() = default;

JitStats Jit::stats() const {
  std::lock_guard lk(impl_->mu);
  return impl_->stats;
}

std::vector<sim::CompiledFunction> Jit::compile(const sim::CompileRequest& req) {
  std::lock_guard lk(impl_->mu);
  std::vector<sim::CompiledFunction> out(req.functions.size());
  const std::vector<FunctionKinds> kinds = infer_kinds(req);
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i].entry_safe = true;
    for (ir::Reg p : req.functions[i].ir->params)
      if (kinds[i].reg[p] == kRef) out[i].entry_safe = false;  // run() passes scalars
  }
  auto& flags = impl_->type_tables.emplace_back(req.heap->type_count(), 0);
  for (std::uint32_t t = 1; t < req.heap->type_count(); ++t) {
    const sim::SimType& ty = req.heap->type(t);
    flags[t] = static_cast<std::uint8_t>((ty.is_array ? kTypeIsArray : 0) | (ty.elem_is_ref ? kTypeRefElems : 0));
  }
  LowerInput in;
  in.request = &req;
  in.kinds = &kinds;
  in.type_flags = flags.data();
  in.barriers = impl_->options.barriers && req.desc != nullptr;
  // The run's C++ barrier, emitted inline; the bitmap pointer is loaded from the descriptor (it
  // is swapped at every GC). x86_64 bakes the bounds in as immediates (the heap never moves);
  // arm64 loads them through a register holding the descriptor's address, which is shorter
  // than building two 64-bit immediates (a64_lower.cc).
  in.barrier = EmitterConfig::from(req.barrier, impl_->options.cache);
#if defined(__aarch64__)
  in.barrier.bounds = BoundsSource::kDescriptor;
#else
  in.barrier.bounds = BoundsSource::kImmediate;
#endif
  in.runtime = &impl_->runtime;
  in.listing = impl_->options.keep_listing ? &impl_->stats.listing : nullptr;
  in.code_ranges = impl_->options.code_ranges;
  const auto& skip = impl_->options.interpret;
  for (std::uint32_t fi = 0; fi < out.size(); ++fi) {
    const std::string& name = req.functions[fi].ir->name;
    if (std::find(skip.begin(), skip.end(), name) != skip.end()) {
      out[fi].reason = "excluded by JitOptions::interpret";
    } else if (!jit_supported()) {
      out[fi].reason = "unsupported on this arch";
    } else {
      in.fn = fi;
#if defined(__aarch64__)
      Lowered l = lower_arm64(in);
#else
      Lowered l = lower_x86_64(in);
#endif
      out[fi].entry = l.entry;
      out[fi].reason = l.error;
      impl_->stats.code_bytes += l.code_bytes;
      if (l.entry && in.code_ranges) {
        const auto begin = reinterpret_cast<std::uint64_t>(l.entry);
        in.code_ranges->push_back({CodeRange::Kind::kFunction, begin, begin + l.code_bytes, name, 0});
      }
    }
    if (out[fi].entry) ++impl_->stats.compiled;
    else ++impl_->stats.interpreted;
  }
  return out;
}

}  // namespace objprof::sim::jit
