// Static path lengths of an emitted barrier: how many instructions one access executes for
// each outcome, found by walking the emitted sequence (an asmjit Builder's node list) and
// following its branches. This is how objprof reports "barrier instructions per access" for
// arm64, where qemu timing means nothing; bench_emitted_barrier prints the table.
#pragma once

#include "backends/emit_config.h"

#include <asmjit/core.h>

namespace objprof::backends {

struct BarrierPaths {
  int hit = -1;           // obj == cache (-1 when the variant has no cache)
  int mark = 0;           // in range, not cached, bit clear: the full miss path
  int mark_bit_set = 0;   // in range, not cached, bit already set (shorter for test-first)
  int out_of_range = 0;   // null, below begin or at/after end
  int emitted = 0;        // instructions in the sequence
};

// `arch` is asmjit::Arch::kX64 or kAArch64 (either works on any host). desc_register: the
// descriptor is in a register (true) or its address is baked in (false).
Result<BarrierPaths> barrier_paths(asmjit::Arch arch, const EmitterConfig& cfg, const BarrierDescriptor& desc,
                                   bool desc_register = true);

}  // namespace objprof::backends
