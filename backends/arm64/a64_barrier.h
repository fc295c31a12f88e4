// The access barrier emitted for arm64 into any asmjit emitter attached to AArch64 code
// (Assembler, Builder, or Compiler with virtual registers in A64BarrierRegs). Racy,
// thread-field cache, object in x1, default scratch x16, x17, x15 (docs/backends.md puts it
// beside seed 001 §2.3's sequence):
//     ldr   x17, [x19, #cache]            ; compare with the cached object (cfg.fields.cache)
//     cmp   x17, x1
//     b.eq  done
//     ldr   x16, [desc, #begin]           ; range check against the space
//     sub   x16, x1, x16                  ;   (kImmediate: movz/movk x16, #begin)
//     ldr   x17, [desc, #size]            ;   (kImmediate: movz/movk x17, #size)
//     cmp   x16, x17                      ;   one unsigned compare: below begin wraps, null too
//     b.hs  done
//     str   x1, [x19, #cache]             ; store the new cache
//     ldr   x17, [desc, #bitmap]          ; byte and bit: the active buffer, reloaded on every miss
//     add   x17, x17, x16, lsr #(log2K+3)
//     ubfx  w16, w16, #log2K, #3
//     mov   w15, #1
//     lsl   w16, w15, w16
//     ldrb  w15, [x17]                    ; load/or/store the byte
//     orr   w15, w15, w16
//     strb  w15, [x17]
//   done:
// Atomic marks replace the last three with `stsetb w16, [x17]` (LSE) or an
// ldxrb/orr/stxrb/cbnz loop whose status goes to the fourth scratch register (x14).
// No descriptor register: x15 is loaded with &desc (movz/movk) once.
#pragma once

#include "backends/emit_config.h"

#include <asmjit/arm.h>
#include <asmjit/arm/a64emitter.h>
#include <asmjit/arm/a64operand.h>

#include <array>

namespace objprof::backends {

// Registers the arm64 barrier uses. obj, thread, desc and cache are read (cache is also written
// when pinned); scratch[0 .. a64_scratch_count(cfg)-1] are written; nothing else is touched
// but NZCV.
struct A64BarrierRegs {
  asmjit::a64::Gp obj;                       // x-register holding the object (0 for null)
  asmjit::a64::Gp thread = asmjit::a64::x19;  // the struct holding the cache and counters at
                                             // cfg.fields: ThreadState* by default, in ART's
                                             // thread register; any x register but sp/xzr
  asmjit::a64::Gp desc;                      // BarrierDescriptor*; invalid: &desc baked in
  asmjit::a64::Gp cache = asmjit::a64::x21;   // kPinnedRegister: callee-saved, clear of ART's
                                             // x19 (thread) and x20 (marking register)
  // ART's IP0/IP1 (x16, x17) and the seed's x15 first; x14 only for the exclusive loop's status.
  std::array<asmjit::a64::Gp, 4> scratch = {asmjit::a64::x16, asmjit::a64::x17, asmjit::a64::x15,
                                            asmjit::a64::x14};

  static A64BarrierRegs art(asmjit::a64::Gp obj) noexcept;  // the defaults above
};

// Scratch registers a variant writes: 3, or 4 for an atomic mark with the exclusive loop.
int a64_scratch_count(const EmitterConfig& cfg) noexcept;
// kAuto resolved for this host (asmjit CpuInfo::host(): LSE or exclusive; exclusive when the
// host is not arm64, since ARMv8.0 is the baseline every arm64 CPU runs).
A64Atomics a64_resolve_atomics(A64Atomics a) noexcept;

// Emits one barrier for regs.obj. Returns an error (and emits nothing usable) if cfg is invalid
// (EmitterConfig::validate(Isa::kArm64): e.g. a thread-field offset that is negative, not a
// multiple of 8 or above 32760, which ldr/str cannot encode), a needed register is missing,
// registers alias, a register is not an x register or is sp/xzr, or asmjit reports an error.
Status emit_access_barrier(asmjit::BaseEmitter& e, const EmitterConfig& cfg, const BarrierDescriptor& desc,
                           const A64BarrierRegs& regs);

// Out-of-line form (see x86_barrier.h): the cache compare and `b.ne slow` at the site, a hit
// falls through; the miss path later, binding `slow` and branching back to `resume`.
Status emit_access_barrier_fast(asmjit::BaseEmitter& e, const EmitterConfig& cfg, const BarrierDescriptor& desc,
                                const A64BarrierRegs& regs, asmjit::Label slow);
Status emit_access_barrier_slow(asmjit::BaseEmitter& e, const EmitterConfig& cfg, const BarrierDescriptor& desc,
                                const A64BarrierRegs& regs, asmjit::Label slow, asmjit::Label resume);

// Pinned cache register <-> the cache word at [thread, #cfg.fields.cache].
Status emit_load_pinned_cache(asmjit::BaseEmitter& e, const EmitterConfig& cfg, const A64BarrierRegs& regs);
Status emit_store_pinned_cache(asmjit::BaseEmitter& e, const EmitterConfig& cfg, const A64BarrierRegs& regs);

}  // namespace objprof::backends
