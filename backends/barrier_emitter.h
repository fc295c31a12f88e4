// Emitting objprof's access barrier from a JIT: the shared configuration (emit_config.h) and
// the two backends. A JIT author calls emit_access_barrier(emitter, cfg, desc, regs) at every
// access site the elimination pass kept; docs/backends.md has the register conventions.
//
//   EmitterConfig cfg = EmitterConfig::from(barrier_config, CacheLocation::kPinnedRegister);
//   X86BarrierRegs regs = X86BarrierRegs::sysv(obj_reg);  // or A64BarrierRegs::art(x1)
//   if (Status s = emit_access_barrier(cc, cfg, bitmap.descriptor(), regs); !s) ...
#pragma once

#include "backends/arm64/a64_barrier.h"
#include "backends/emit_config.h"
#include "backends/x86_64/x86_barrier.h"
