// A seeded generator of random IR functions for property tests, benchmarks and
// `objprof elim --generate`. The same seed and options give the same function on every
// platform. Shapes:
//  - kStructured: nested loops (while and do-while), diamonds, if-then, switches, early
//    returns; reducible.
//  - kUnstructured: a chain of blocks with random forward jumps, back edges (loops, self
//    loops) and far jumps that enter loops in the middle (irreducible), occasional
//    unreachable blocks.
//  - kMixed: structured code with some gotos redirected at random (both of the above).
// Instructions favour accesses to a few hot registers, reassignment of registers along paths
// (dense phis), moves, and calls/allocations/safepoints at `safepoint_percent`.
#pragma once

#include "objprof/ir/ir.h"

#include <cstdint>
#include <string>

namespace objprof::ir {

enum class CfgShape : std::uint8_t { kStructured, kUnstructured, kMixed };

struct GenOptions {
  std::uint32_t blocks = 16;           // approximate (structured shapes round it)
  std::uint32_t regs = 8;              // at least 2
  std::uint32_t max_block_instrs = 6;  // non-terminator instructions per block: 0..max
  CfgShape shape = CfgShape::kMixed;
  std::uint32_t safepoint_percent = 10;  // per instruction
  std::uint32_t reassign_percent = 30;   // per instruction: define a register
};

// One function named `name`. Types used: `Obj { f: ref, g: ref, n: int }` (see gen_types()).
Function generate_function(std::uint64_t seed, const GenOptions& options, std::string name = "gen");

// A module with the generator's types and `count` functions gen0..gen{count-1}; function i
// uses seed `seed * 1000003 + i` and, for kMixed, cycles through the three shapes.
Module generate_module(std::uint64_t seed, std::uint32_t count, const GenOptions& options);

// The types generated functions refer to.
Module gen_types();

}  // namespace objprof::ir
