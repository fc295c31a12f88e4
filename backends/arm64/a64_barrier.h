// The access barrier emitted for arm64 into any asmjit a64::Emitter (Assembler, Builder or
// Compiler). The racy thread-field sequence is seed 001 §2.3's (docs/backends.md puts the two
// side by side):
//     ldr   x16, [x19, #cache]            ; compare with the cached object
//     cmp   x16, x1
//     b.eq  done
//     mov   x16, #begin  / ldr x16, [desc, #begin]
//     sub   x16, x1, x16                  ; range check against the space:
//     mov   x17, #size   / ldr x17, [desc, #size]
//     cmp   x16, x17                      ;   one unsigned compare (below begin wraps, null too)
//     b.hs  done
//     str   x1, [x19, #cache]             ; store the new cache
//     lsr   x16, x16, #log2K              ; byte and bit
//     ldr   x17, [desc, #bitmap]          ; the active buffer, reloaded on every miss
//     add   x17, x17, x16, lsr #3
//     and   w16, w16, #7
//     mov   w15, #1
//     lsl   w16, w15, w16
//     ldrb  w15, [x17]                    ; load/or/store the byte
//     orr   w15, w15, w16
//     strb  w15, [x17]
//   done:
// Atomic marks replace the last three with `stsetb w16, [x17]` (LSE) or an ldxrb/stxrb loop.
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
  asmjit::a64::Gp thread = asmjit::a64::x19;  // ThreadState*, ART's thread register
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

Status emit_access_barrier(asmjit::a64::Emitter& e, const EmitterConfig& cfg, const BarrierDescriptor& desc,
                           const A64BarrierRegs& regs);

Status emit_load_pinned_cache(asmjit::a64::Emitter& e, const A64BarrierRegs& regs);
Status emit_store_pinned_cache(asmjit::a64::Emitter& e, const A64BarrierRegs& regs);

}  // namespace objprof::backends
