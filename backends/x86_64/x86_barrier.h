// The access barrier emitted for x86_64 into any asmjit x86::Emitter (Assembler, Builder, or
// Compiler via cc.as<x86::Emitter>() with virtual registers in X86BarrierRegs).
//
// Racy, thread-field cache, bounds from the descriptor (scratch t0, t1, t2):
//     cmp   obj, [thread + cache]         ; hit: one compare and a taken-not branch
//     je    done
//     mov   t0, obj
//     sub   t0, [desc + begin]
//     cmp   t0, [desc + size]             ; unsigned: below begin wraps around, null too
//     jae   done
//     mov   [thread + cache], obj
//     shr   t0, log2K                     ; granule
//     mov   t1, t0
//     shr   t1, 3                         ; byte index
//     add   t1, [desc + bitmap]           ; the active buffer, reloaded on every miss
//     and   t0d, 7
//     xor   t2d, t2d
//     bts   t2d, t0d                      ; mask = 1 << bit (no cl needed)
//     or    byte [t1], t2b                ; kAtomic: lock or; kAtomicTestFirst: test/jnz first
//   done:
// Counting adds `inc qword [thread + counter]` for executed, cache_hits and marks.
#pragma once

#include "backends/emit_config.h"

#include <asmjit/x86.h>

#include <array>

namespace objprof::backends {

// Registers the x86_64 barrier uses. obj, thread, desc and cache are read (cache is also written
// when pinned); scratch[0..2] are written; no other register is touched. EFLAGS is clobbered.
struct X86BarrierRegs {
  asmjit::x86::Gp obj;     // 64-bit object address (0 for null); preserved
  asmjit::x86::Gp thread;  // ThreadState*; needed when cfg.uses_thread()
  asmjit::x86::Gp desc;    // BarrierDescriptor*; if invalid (default), &desc is baked in as an
                           // immediate and the descriptor must outlive the code
  asmjit::x86::Gp cache;   // kPinnedRegister only: the cache, read and updated in place
  std::array<asmjit::x86::Gp, 3> scratch;  // all three written by every variant

  // objprof's x86_64 SysV conventions for JIT code: thread in r15 (HotSpot's thread register),
  // pinned cache in r14 (callee-saved, so C calls from the method keep it), scratch r10, r11
  // and rax (caller-saved and not argument registers except rax, which is free between calls).
  static X86BarrierRegs sysv(asmjit::x86::Gp obj) noexcept;
};

inline constexpr int kX86ScratchCount = 3;

// Emits one barrier for regs.obj. Returns an error (and emits nothing usable) if a needed
// register is missing, registers alias, a register is not 64-bit, or asmjit reports one.
Status emit_access_barrier(asmjit::x86::Emitter& e, const EmitterConfig& cfg, const BarrierDescriptor& desc,
                           const X86BarrierRegs& regs);

// Pinned cache register <-> ThreadState::cache: on method entry / after a safepoint, and on exit.
Status emit_load_pinned_cache(asmjit::x86::Emitter& e, const X86BarrierRegs& regs);
Status emit_store_pinned_cache(asmjit::x86::Emitter& e, const X86BarrierRegs& regs);

}  // namespace objprof::backends
