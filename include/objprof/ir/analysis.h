// Analyses over one function (its FunctionShape), shaped like LLVM's new pass manager: each analysis has a
// `run(...) -> Result`, a printer, and a verifier beside it.
//
//   verify_function      structural checks (terminators, targets, registers, sites, entry)
//   CfgAnalysis          successors/predecessors, reverse post-order, reachability, critical edges
//   DominatorTreeAnalysis  Semi-NCA dominators over the reachable blocks
//   DominanceFrontierAnalysis  frontiers from the dominator tree (CHK "runner" walk)
//   SsaAnalysis          minimal SSA: phi placement at iterated frontiers, renaming by a
//                        dominator-tree walk, plus copy roots (moves and trivial phis)
//
// Unreachable blocks have no dominator, no frontier and no SSA values; analyses never fail on
// them. FunctionAnalyses computes each result once, on demand (a tiny analysis manager).
// All results are plain values; nothing here is thread-safe for concurrent mutation, but
// const results may be read from many threads.
#pragma once

#include "objprof/ir/csr_lists.h"
#include "objprof/ir/function_shape.h"
#include "objprof/ir/ir.h"
#include "objprof/result.h"

#include <memory>
#include <span>
#include <string>
#include <vector>

namespace objprof::ir {

// Structural verifier. Checks: at least one block; the entry block has no predecessors; every
// block ends with exactly one terminator; branch targets exist; registers < num_regs; access
// instructions have unique sites; operand counts match the opcode. With a module, also that
// types and fields named by instructions exist.
Status verify_function(const Function& f, const Module* module = nullptr);

// ---- CFG ----------------------------------------------------------------------------------
// Per-block lists of blocks in one array (compressed sparse rows): list(b) is a span.
using Adjacency = CsrLists<BlockId>;

struct Cfg {
  Adjacency succs;  // distinct successors, in terminator order
  Adjacency preds;  // distinct predecessors (reachable or not), in block order
  // Per successor edge (parallel to succs.items_): the edge's position in its target's preds,
  // which is where a phi at the target keeps the operand that flows along it.
  std::vector<std::uint32_t> pred_position;
  std::vector<BlockId> rpo;                 // reachable blocks in reverse post-order
  std::vector<std::uint32_t> rpo_index;     // block -> index in rpo, kNoBlock if unreachable
  std::vector<std::pair<BlockId, BlockId>> critical_edges;  // between reachable blocks
  std::vector<BlockId> unreachable;

  bool reachable(BlockId b) const { return rpo_index[b] != kNoBlock; }
};

class CfgAnalysis {
 public:
  using Result = Cfg;
  static Cfg run(const Function& f);
  static Cfg run(const FunctionShape& shape);
};
std::string print_cfg(const Function& f, const Cfg& cfg);

// ---- Dominators ---------------------------------------------------------------------------
struct DomTree {
  std::vector<BlockId> idom;                   // kNoBlock for the entry and unreachable blocks
  CsrLists<BlockId> children;  // dominator-tree children, in RPO order
  std::vector<std::uint32_t> pre, post;        // tree DFS numbers, for O(1) dominates()

  // Does a dominate b (reflexive)? False if either is unreachable.
  bool dominates(BlockId a, BlockId b) const {
    return pre[a] != kNoBlock && pre[b] != kNoBlock && pre[a] <= pre[b] && post[b] <= post[a];
  }
};

class DominatorTreeAnalysis {
 public:
  using Result = DomTree;
  static DomTree run(const Cfg& cfg);
};
std::string print_domtree(const Function& f, const DomTree& dt);
// Checks the tree against a slow reference (iterative set intersection) on functions of up
// to `max_blocks` blocks, and structural invariants on all.
Status verify_domtree(const Function& f, const Cfg& cfg, const DomTree& dt, std::size_t max_blocks = 2000);

// ---- Dominance frontiers ------------------------------------------------------------------
struct DominanceFrontiers {
  CsrLists<BlockId> df;  // per block, distinct, unordered
};

class DominanceFrontierAnalysis {
 public:
  using Result = DominanceFrontiers;
  static DominanceFrontiers run(const Cfg& cfg, const DomTree& dt);
};
std::string print_frontiers(const Function& f, const DominanceFrontiers& df);
// DF(b) = { y : b dominates a predecessor of y and b does not strictly dominate y }.
Status verify_frontiers(const Function& f, const Cfg& cfg, const DomTree& dt, const DominanceFrontiers& df);

// ---- SSA ----------------------------------------------------------------------------------
using ValueId = std::uint32_t;
inline constexpr ValueId kNoValue = 0xffffffffu;

struct SsaForm {
  enum class Kind : std::uint8_t { kEntry, kPhi, kInstr };
  struct Value {
    Kind kind;
    Reg reg;             // the register this value was defined into
    BlockId block;       // defining block (the entry block for kEntry)
    std::uint32_t index; // phi index or instruction index in the block
  };
  struct Phi {
    Reg reg;
    ValueId value;
    std::uint32_t first_arg;  // operands are phi_args[first_arg, first_arg + num_args)
    std::uint32_t num_args;   // == cfg.preds[block].size()
  };

  std::uint32_t num_regs = 0;
  std::vector<Value> values;              // values [0, num_regs) are the entry values of v0..
  CsrLists<Phi> phis;                     // per block, in register order
  std::vector<ValueId> phi_args;          // phi operands, parallel to cfg.preds[block];
                                          // kNoValue from unreachable predecessors
  std::vector<std::uint32_t> instr_base;  // per block: index of its first instruction below
  std::vector<std::uint32_t> use_base;    // per instruction: index of its first operand in uses
  std::vector<ValueId> uses;              // operand values (kNoValue in unreachable blocks)
  std::vector<ValueId> defs;              // per instruction: defined value or kNoValue
  std::vector<ValueId> entry_values;      // block * num_regs + reg: value live in reg on entry
  std::vector<ValueId> copy_root;         // per value: moves and trivial phis resolved

  ValueId use(BlockId b, std::size_t instr, std::size_t operand) const {
    return uses[use_base[instr_base[b] + instr] + operand];
  }
  ValueId def(BlockId b, std::size_t instr) const { return defs[instr_base[b] + instr]; }
  std::span<const ValueId> incoming(const Phi& phi) const { return {phi_args.data() + phi.first_arg, phi.num_args}; }
  ValueId entry_value(BlockId b, Reg r) const { return entry_values[static_cast<std::size_t>(b) * num_regs + r]; }
  std::size_t num_phis() const;
};

class SsaAnalysis {
 public:
  using Result = SsaForm;
  static SsaForm run(const FunctionShape& shape, const Cfg& cfg, const DomTree& dt, const DominanceFrontiers& df);
};
// The function with phis and SSA value names (%N), one line per instruction.
std::string print_ssa(const Function& f, const Cfg& cfg, const SsaForm& ssa);
// Every use is dominated by its definition (phi operands at the end of their predecessor),
// every phi has one operand per predecessor, and every register's use sees the definition
// that reaches it (checked against a per-register reaching-definition walk on small functions).
Status verify_ssa(const Function& f, const Cfg& cfg, const DomTree& dt, const SsaForm& ssa);

// ---- Analysis manager ---------------------------------------------------------------------
struct AnalysisScratch;  // working memory of the analyses and passes (src/ir/analysis_scratch.h)

// Computes and caches the analyses of one function. The function (or shape) must outlive this
// object and must not change while results are cached (call invalidate() after a change).
// Built from a Function, it derives the shape on first use; built from a FunctionShape (a VM
// that describes its own code), function() is not available and only shape-based passes run.
//
// A compiler thread keeps one FunctionAnalyses and reset()s it to each function it compiles:
// the results and the analyses' and passes' working arrays keep their storage, so once the
// functions stop growing nothing is allocated and the arrays stay warm in the caches. A
// reference to a result is valid until the next reset() or invalidate(). The storage of the
// largest function seen is held until the manager is destroyed.
class FunctionAnalyses {
 public:
  FunctionAnalyses();  // bound to no function: reset() before use
  explicit FunctionAnalyses(const Function& f);
  explicit FunctionAnalyses(const FunctionShape& shape);
  ~FunctionAnalyses();
  // Results are handed out by reference and the shape may be its own: it stays where it is.
  FunctionAnalyses(const FunctionAnalyses&) = delete;
  FunctionAnalyses& operator=(const FunctionAnalyses&) = delete;

  void reset(const Function& f);
  void reset(const FunctionShape& shape);
  bool has_function() const { return f_ != nullptr; }
  const Function& function() const { return *f_; }
  const FunctionShape& shape();
  const Cfg& cfg();
  const DomTree& domtree();
  const DominanceFrontiers& frontiers();
  const SsaForm& ssa();
  void invalidate();
  // Working memory objprof's passes borrow for the function's duration.
  AnalysisScratch& scratch();

  // What the manager is bound to. A pass that analyses a transformed copy of the function (the
  // global pass's RPO layout) binds the manager to the copy, so that the copy's analyses reuse
  // the same arrays, and rebinds it afterwards: the original's results are then recomputed on
  // demand, and a shape derived from an ir::Function is kept.
  struct Binding {
    const Function* function;
    const FunctionShape* shape;
  };
  // Binds the manager to such a copy whose blocks [0, num_reachable) are its reachable blocks
  // in reverse post-order and the others unreachable, as the RPO layout makes them: its CFG is
  // then built without a depth-first walk. A wrong count gives wrong analyses.
  void reset_in_rpo(const FunctionShape& shape, std::uint32_t num_reachable);
  Binding binding() const { return {f_, shape_ptr_}; }
  void rebind(Binding b) {
    invalidate();
    f_ = b.function;
    shape_ptr_ = b.shape;
  }

 private:
  enum : std::uint8_t { kCfgValid = 1, kDomTreeValid = 2, kFrontiersValid = 4, kSsaValid = 8 };
  const Function* f_ = nullptr;
  const FunctionShape* shape_ptr_ = nullptr;  // the caller's shape, or &own_shape_ once derived
  std::uint8_t valid_ = 0;
  BlockId known_rpo_ = kNoBlock;  // reset_in_rpo's count until the next reset or invalidate
  FunctionShape own_shape_;
  Cfg cfg_;
  DomTree dt_;
  DominanceFrontiers df_;
  SsaForm ssa_;
  std::unique_ptr<AnalysisScratch> scratch_;
};

}  // namespace objprof::ir
