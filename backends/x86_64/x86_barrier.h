// The access barrier emitted for x86_64 into any asmjit emitter attached to x86_64 code
// (Assembler, Builder, or Compiler with virtual registers in X86BarrierRegs).
//
// Racy, thread-field cache, bounds from the descriptor (scratch t0, t1, t2 = r10, r11, rax):
//     cmp   obj, [thread + cache]         ; a hit is one compare and one taken branch
//                                         ;   (cache = cfg.fields.cache: 0 in ThreadState)
//     je    done
//     mov   t0, obj
//     sub   t0, [desc + begin]
//     cmp   t0, [desc + size]             ; unsigned: below begin wraps around, null too
//     jae   done
//     mov   [thread + cache], obj
//     mov   t1, t0
//     shr   t1, log2K + 3                 ; byte index
//     add   t1, [desc + bitmap]           ; the active buffer, reloaded on every miss
//     shr   t0, log2K                     ; granule
//     and   t0d, 7                        ; bit index
//     xor   t2d, t2d
//     bts   t2d, t0d                      ; mask = 1 << bit (bts reg,reg: one cycle, no cl)
//     or    byte [t1], t2b                ; kAtomic: lock or; kAtomicTestFirst: test/jnz first
//   done:
// Immediate bounds: `lea t0, [obj - begin]` (or mov/add for a high space) and `cmp t0, size`.
// No descriptor register: t2 is loaded with &desc once. Counting adds a non-locked
// `inc qword [thread + counter]` for executed, cache_hits and marks (owner-thread counters).
#pragma once

#include "backends/emit_config.h"

#include <asmjit/x86.h>

#include <array>

namespace objprof::backends {

// Registers the x86_64 barrier uses. obj, thread, desc and cache are read (cache is also written
// when pinned); scratch[0..2] are written; no other register is touched. EFLAGS is clobbered.
struct X86BarrierRegs {
  asmjit::x86::Gp obj;     // 64-bit object address (0 for null); preserved
  asmjit::x86::Gp thread;  // the struct holding the cache and counters at cfg.fields (ThreadState*
                           // by default, or the VM's thread struct); any register but rsp;
                           // needed when cfg.uses_thread()
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

// Emits one barrier for regs.obj. Returns an error (and emits nothing usable) if cfg is invalid
// (EmitterConfig::validate(Isa::kX86_64): e.g. a thread-field offset that is not a multiple of
// 8 or does not fit a 32-bit displacement), a needed register is missing, registers alias, a
// register is not 64-bit or is rsp, or asmjit reports an error.
Status emit_access_barrier(asmjit::BaseEmitter& e, const EmitterConfig& cfg, const BarrierDescriptor& desc,
                           const X86BarrierRegs& regs);

// Out-of-line form, for JITs that emit slow paths after the method body (as ART's
// SlowPathCode): at the access site emit_access_barrier_fast compares with the cache; a hit
// falls through (no taken branch), a miss jumps to `slow`. The caller binds a `resume` label
// right after it, and later, after the method's return, emit_access_barrier_slow binds `slow`,
// runs the range check and the mark, and jumps back to `resume`. Same cfg, desc and regs for
// both halves; only for variants with a cache compared first (uses_cache() && !range_first).
// Behaviour is identical to emit_access_barrier.
Status emit_access_barrier_fast(asmjit::BaseEmitter& e, const EmitterConfig& cfg, const BarrierDescriptor& desc,
                                const X86BarrierRegs& regs, asmjit::Label slow);
Status emit_access_barrier_slow(asmjit::BaseEmitter& e, const EmitterConfig& cfg, const BarrierDescriptor& desc,
                                const X86BarrierRegs& regs, asmjit::Label slow, asmjit::Label resume);

// Pinned cache register <-> the cache word at [thread + cfg.fields.cache] (ThreadState::cache by
// default): on method entry / after a safepoint, and on exit.
Status emit_load_pinned_cache(asmjit::BaseEmitter& e, const EmitterConfig& cfg, const X86BarrierRegs& regs);
Status emit_store_pinned_cache(asmjit::BaseEmitter& e, const EmitterConfig& cfg, const X86BarrierRegs& regs);

}  // namespace objprof::backends
