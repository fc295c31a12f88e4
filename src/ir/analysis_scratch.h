// The working memory of the analyses and of the global pass, kept by a FunctionAnalyses across
// the functions it is reset to. A compiler thread analyses function after function; with fresh
// arrays each time, a 100k-block function spends a fifth of its time in page faults and in the
// allocator, and every array starts cold. Each analysis sizes what it uses here with
// assign/resize/clear, which keep the capacity an earlier function left.
#pragma once

#include "objprof/ir/analysis.h"
#include "objprof/ir/elim.h"

#include "block_layout.h"

#include <cstdint>
#include <utility>
#include <vector>

namespace objprof::ir {

struct CfgScratch {
  std::vector<std::uint32_t> cursor;  // predecessor fill positions
  std::vector<BlockId> post;
  std::vector<std::uint8_t> seen;
  std::vector<std::pair<BlockId, std::uint32_t>> stack;
};

struct DominatorScratch {
  std::vector<BlockId> vertex;
  std::vector<std::uint32_t> num, parent, semi, label, ancestor, idom, path;
  std::vector<std::pair<std::uint32_t, BlockId>> edges;
  std::vector<std::pair<BlockId, std::uint32_t>> stack;
};

struct FrontierScratch {
  std::vector<std::pair<std::uint32_t, BlockId>> entries;
  std::vector<BlockId> last;
};

struct SsaScratch {
  std::vector<std::uint64_t> def_set, phi_set;  // phi placement by register sets
  std::vector<BlockId> work;
  std::vector<std::uint8_t> queued;
  CsrLists<Reg> phi_regs;
  std::vector<ValueId> cur, parent;
  std::vector<std::pair<Reg, ValueId>> undo;
  struct Frame {
    BlockId block;
    std::uint32_t next_child;
    std::size_t undo_mark;
  };
  std::vector<Frame> stack;
};

// The global pass's solver state (elim_global.cc).
struct GlobalPassScratch {
  // mark_[value] == stamp: the value's object is marked at the current point of the walk.
  // Stamps only grow (across functions too), so the array is never cleared but on wrap-around.
  std::uint32_t stamp = 0;
  std::vector<std::uint32_t> mark;
  // Per value, beside its mark: the site whose barrier marked it, or kNoSite and why it is
  // available without one. Together, so that a decision reads one place. (Not in one array
  // with the marks: the exit facts read only marks, 16 per block, and 12-byte entries made
  // those reads touch more lines.)
  struct Origin {
    SiteId site;
    Reason reason;
  };
  std::vector<Origin> origin;
  std::vector<ValueId> cur;
  std::vector<std::uint64_t> out_bits, in, out;
  std::vector<std::uint8_t> dirty;        // by RPO index
  std::vector<std::uint8_t> block_flags;  // by RPO index: what the block's last transfer found
};

// The global pass on a copy of the function laid out in RPO (elim_global.cc): the copy, and
// per block of the copy where its decisions start in the original's result. The copy's
// analyses use the manager's own arrays.
struct LayoutScratch {
  RpoLayout layout;
  std::vector<std::uint32_t> decision_first;
};

struct AnalysisScratch {
  CfgScratch cfg;
  DominatorScratch dominators;
  FrontierScratch frontiers;
  SsaScratch ssa;
  GlobalPassScratch global;
  LayoutScratch layout;
};

// The analyses into existing results, reusing their storage and `scratch`'s.
// `known_rpo`: the caller knows that blocks [0, known_rpo) are the reachable ones, in reverse
// post-order, and the others unreachable (a shape laid out by lay_out_in_rpo), so the
// depth-first walk is skipped; kNoBlock: walk.
void run_cfg(const CsrLists<BlockId>& raw_succs, Cfg& out, CfgScratch& scratch, BlockId known_rpo = kNoBlock);
void run_dominators(const Cfg& cfg, DomTree& out, DominatorScratch& scratch);
void run_frontiers(const Cfg& cfg, const DomTree& dt, DominanceFrontiers& out, FrontierScratch& scratch);
void run_ssa(const FunctionShape& shape, const Cfg& cfg, const DomTree& dt, const DominanceFrontiers& df, SsaForm& out,
             SsaScratch& scratch);

}  // namespace objprof::ir
