// BarrierThunk: a host-native function holding nothing but an emitted access barrier, for the
// differential tests and the benchmarks (and as a minimal example of calling the emitters).
//
//   kSingle: void f(ThreadState* thread, BarrierDescriptor* desc, Address obj)
//            one barrier for obj.
//   kLoop:   void f(ThreadState* thread, BarrierDescriptor* desc, const Address* objs, size_t n)
//            one barrier per element, in order; n may be 0.
//
// Both follow the register conventions of X86BarrierRegs::sysv / A64BarrierRegs::art: the
// thread pointer is moved to r15 / x19 and a pinned cache lives in r14 / x21 (loaded from
// ThreadState::cache on entry and stored back on exit, as a JIT does around a method); so
// cfg.fields must be ThreadState's (the default), anything else is refused. When
// cfg.bounds is kImmediate the bounds of `desc` at compile time are baked in; the descriptor
// pointer passed at run time is used for the bitmap (desc_register) or &desc is baked.
// Only the host's architecture can be compiled (x86_64 or arm64); elsewhere: kUnsupported.
#pragma once

#include "backends/emit_config.h"

#include <asmjit/core.h>

#include <cstddef>
#include <memory>

namespace objprof::backends {

enum class ThunkKind : std::uint8_t { kSingle, kLoop };

struct ThunkOptions {
  // Address the descriptor through the argument register (true) or bake &desc into the code
  // (false; then `desc` must outlive the thunk).
  bool desc_register = true;
  // Emit the barrier in the out-of-line form (emit_access_barrier_fast at the site, the miss
  // path after the return). Only for variants with a cache compared first.
  bool out_of_line = false;
};

class BarrierThunk {
 public:
  using SingleFn = void (*)(ThreadState*, BarrierDescriptor*, Address);
  using LoopFn = void (*)(ThreadState*, BarrierDescriptor*, const Address*, std::size_t);

  static Result<BarrierThunk> compile(asmjit::JitRuntime& rt, const EmitterConfig& cfg, const BarrierDescriptor& desc,
                                      ThunkKind kind, ThunkOptions options = {});

  BarrierThunk(BarrierThunk&& other) noexcept;
  BarrierThunk& operator=(BarrierThunk&& other) noexcept;
  ~BarrierThunk();

  ThunkKind kind() const noexcept { return kind_; }
  SingleFn single() const noexcept { return kind_ == ThunkKind::kSingle ? reinterpret_cast<SingleFn>(fn_) : nullptr; }
  LoopFn loop() const noexcept { return kind_ == ThunkKind::kLoop ? reinterpret_cast<LoopFn>(fn_) : nullptr; }

 private:
  BarrierThunk(asmjit::JitRuntime* rt, void* fn, ThunkKind kind) : rt_(rt), fn_(fn), kind_(kind) {}
  asmjit::JitRuntime* rt_ = nullptr;
  void* fn_ = nullptr;
  ThunkKind kind_ = ThunkKind::kSingle;
};

// True if BarrierThunk can compile on this host.
bool barrier_thunks_supported() noexcept;

}  // namespace objprof::backends
