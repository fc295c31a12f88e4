// A shape's blocks laid out in reverse post-order, for the passes that walk them that way.
//
// Every stage of the global pass walks blocks in RPO or in dominator-tree order, and keeps its
// per-block, per-instruction and per-value arrays indexed by block id or in block order. When
// the VM's block order differs from RPO (code generated or laid out for other reasons, e.g. a
// chain broken by returns with its pieces reached from far away), each step of those walks
// lands somewhere else in arrays of tens of MB: at 100k blocks a fifth of the pass's time went
// to that. Laid out in RPO, the same walks stream. The layout is a permutation: the entry stays
// block 0, the unreachable blocks follow the reachable ones in id order, instructions keep their
// order within a block and successors theirs, so a DFS of the copy visits the same blocks in the
// same order and its RPO is 0, 1, 2, ... (the analyses' results are those of the original, with
// the blocks renamed).
#pragma once

#include "objprof/ir/analysis.h"
#include "objprof/ir/function_shape.h"

#include <cstdint>
#include <utility>
#include <vector>

namespace objprof::ir {

struct RpoLayout {
  FunctionShape shape;          // the blocks in RPO, then the unreachable ones
  std::vector<BlockId> old_of;  // block of `shape` -> block of the original
  std::vector<BlockId> new_of;  // block of the original -> block of `shape`
  std::uint32_t num_reachable = 0;  // blocks [0, num_reachable) of `shape` are reachable
  // The depth-first walk's working memory.
  std::vector<std::uint8_t> seen;
  std::vector<std::pair<BlockId, std::uint32_t>> stack;
};

// A step of the RPO that moves this many blocks or more away from the block before it lands
// in other pages of every per-block array.
inline constexpr std::uint32_t kFarStep = 256;
// `only_if_scattered`: the layout pays only when at least one step in this many is far. Measured
// at 100k blocks (bench_elim, docs/results.md): the generator's unstructured code (~5 % far
// steps) takes 0.77-0.89x the time laid out, its mixed code (2-3 %) about the same, its
// structured code (0.2 %) ~1.1x.
inline constexpr std::size_t kScatteredShare = 32;

// Lays `shape` out into `out`, reusing out's storage, and returns true; or returns false,
// copying nothing, when the reachable blocks are already 0, 1, 2, ... in RPO with the
// unreachable ones after them, or (`only_if_scattered`) when the RPO's far steps are too few
// to pay for the copy. The order is the CFG's (CfgAnalysis): the same depth-first walk over
// the successors in the VM's order, so it needs no CFG.
bool lay_out_in_rpo(const FunctionShape& shape, RpoLayout& out, bool only_if_scattered);

}  // namespace objprof::ir
