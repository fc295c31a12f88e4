// The global pass: available accesses as a forward must-dataflow over the CFG.
//
// Fact per register r at a program point: "the object now in r is marked in the current
// epoch". It survives a CFG edge unchanged (the value of r entering a block is the value
// leaving the predecessor, whether or not a phi renames it), so the meet at a join is a plain
// AND over predecessors; this is what lets a diamond whose two arms both access v remove the
// join's barrier, and a loop whose body re-accesses v keep only the first barrier.
// Inside a block the facts are lifted to SSA copy roots, so `move` carries availability in
// both directions (accessing either copy marks the one object). Solved to the greatest fixed
// point by iterating in reverse post-order; every paper-pass fact is a fixed-point fact, so
// this pass removes at least what the paper pass removes.
#include "objprof/ir/elim.h"

#include "analysis_scratch.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <span>

namespace objprof::ir {
namespace {

class GlobalSolver {
 public:
  // `decision_first`: per block of am's shape, where its decisions start in out->accesses
  // (out->block_first, or the original's when am holds the RPO layout of it).
  GlobalSolver(FunctionAnalyses& am, const ElimOptions& options, ElimResult* out, const std::uint32_t* decision_first)
      : shape_(am.shape()),
        cfg_(am.cfg()),
        ssa_(am.ssa()),
        options_(options),
        out_(out),
        decision_first_(decision_first),
        scratch_(am.scratch().global),
        stamp_(scratch_.stamp),
        mark_(scratch_.mark),
        origin_(scratch_.origin),
        cur_(scratch_.cur),
        out_bits_(scratch_.out_bits),
        block_flags_(scratch_.block_flags) {}

  bool run() {
    if (cfg_.rpo.empty()) return false;
    const std::size_t n = shape_.num_blocks();
    const auto m = static_cast<std::uint32_t>(cfg_.rpo.size());
    R_ = shape_.num_regs;
    W_ = (R_ + 63) / 64;
    // With root marks a GC re-marks every object a live register holds, so it kills no fact:
    // facts are about values in registers, and a value accessed later is live across the GC.
    exact_ = options_.safepoints == SafepointMode::kExact && !options_.roots_marked;
    // Stamps only grow, so marks left by an earlier function are already stale.
    mark_.resize(ssa_.values.size(), 0);
    // An origin is read only where the value's mark carries the current stamp, which writes it.
    origin_.resize(ssa_.values.size());
    cur_.resize(R_);
    block_flags_.resize(m);
    // Greatest fixed point: start from "everything available" except at the entry.
    out_bits_.assign(n * W_, ~0ull);
    std::vector<std::uint64_t>& in = scratch_.in;
    std::vector<std::uint64_t>& out = scratch_.out;
    in.resize(W_);
    out.resize(W_);
    const BlockId entry = cfg_.rpo[0];
    // Sweeps in RPO over the blocks whose predecessors changed; another sweep is needed only
    // when a change flows along a back edge. Each visit runs the block's full transfer, which
    // also records its decisions: a block's last visit saw its final entry facts (a change of
    // a predecessor's exit facts makes it dirty again), so its last decisions stand. The
    // blocks are visited ~1.07 times each, so this costs less than summarizing every block
    // for the sweeps and walking it once more to decide.
    std::vector<std::uint8_t>& dirty = scratch_.dirty;  // by RPO index
    dirty.assign(m, 1);
    bool again = true;
    while (again) {
      again = false;
      for (std::uint32_t i = 0; i < m; ++i) {
        if (!dirty[i]) continue;
        dirty[i] = 0;
        const BlockId b = cfg_.rpo[i];
        meet(b, entry, in.data());
        transfer(i, b, in.data(), out.data());
        std::uint64_t* stored = out_bits_.data() + static_cast<std::size_t>(b) * W_;
        // A word loop, not std::equal: that is a memcmp call per visit for one or two words.
        bool changed = false;
        for (std::size_t w = 0; w < W_; ++w) {
          changed |= out[w] != stored[w];
          stored[w] = out[w];
        }
        if (changed) {
          for (BlockId s : cfg_.succs[b]) {
            const std::uint32_t si = cfg_.rpo_index[s];
            dirty[si] = 1;
            if (si <= i) again = true;
          }
        }
      }
    }
    // With `self_check` (tests), every block's transfer runs once more from its final entry
    // facts and must reproduce its stored exit facts; a difference is a bug in objprof.
    if (options_.self_check) {
      for (std::uint32_t i = 0; i < m; ++i) {
        const BlockId b = cfg_.rpo[i];
        meet(b, entry, in.data());
        transfer(i, b, in.data(), out.data());
        if (!std::equal(out.begin(), out.end(), out_bits_.data() + static_cast<std::size_t>(b) * W_)) {
          std::fprintf(stderr, "objprof: global pass self-check: block %u's exit facts are not a fixed point\n", b);
          std::abort();
        }
      }
    }
    std::uint8_t all = 0;
    for (std::uint8_t f : block_flags_) all |= f;
    out_->returns_marked = (all & kReturns) != 0 && (all & kUnmarkedReturn) == 0;
    return (all & kRemoved) != 0;
  }

 private:
  // What a block's last transfer found, for the function's result.
  enum : std::uint8_t { kRemoved = 1, kReturns = 2, kUnmarkedReturn = 4 };

  void meet(BlockId b, BlockId entry, std::uint64_t* in) {
    if (b == entry) {
      std::fill(in, in + W_, 0ull);
      if (options_.receiver_marked && shape_.receiver != kNoReg) in[shape_.receiver / 64] |= 1ull << (shape_.receiver % 64);
      return;
    }
    // Unreachable predecessors keep the all-ones start value, so they drop out of the AND.
    std::fill(in, in + W_, ~0ull);
    for (BlockId p : cfg_.preds[b]) {
      const std::uint64_t* o = out_bits_.data() + static_cast<std::size_t>(p) * W_;
      for (std::size_t w = 0; w < W_; ++w) in[w] &= o[w];
    }
  }

  std::uint32_t new_stamp() {
    if (++stamp_ == 0) {  // wrapped: forget every mark
      std::fill(mark_.begin(), mark_.end(), 0u);
      stamp_ = 1;
    }
    return stamp_;
  }

  // The transfer of block b (RPO index i) from its entry facts `in`: records each access's
  // decision and computes the exit facts `out`. It reads the block's instructions from the
  // shape on every visit: most blocks are visited once, so a compiled form of the block would
  // be written once and hardly read again (at 100k blocks, 6 MB more to stream through).
  void transfer(std::uint32_t i, BlockId b, const std::uint64_t* in, std::uint64_t* out) {
    // Locals, not members: the loops below store 32-bit words, which the compiler must
    // otherwise assume may change R_ or a vector's size, and reload them per register.
    const std::uint32_t R = R_;
    const std::size_t W = W_;
    const ValueId* copy_root = ssa_.copy_root.data();
    const ValueId* entry = ssa_.entry_values.data() + static_cast<std::size_t>(b) * R;
    const ValueId* uses = ssa_.uses.data();
    const ValueId* defs = ssa_.defs.data();
    const std::uint32_t* use_begin = shape_.use_begin.data();
    const std::uint8_t* accessed = shape_.accessed.data();
    const std::uint8_t* flags = shape_.flags.data();
    const Reg* dst = shape_.dst.data();
    std::uint32_t* mark = mark_.data();
    GlobalPassScratch::Origin* origin = origin_.data();
    ValueId* cur = cur_.data();  // each register's copy root, from the entry to the exit
    std::uint32_t s = new_stamp();
    for (Reg r = 0; r < R; ++r) cur[r] = copy_root[entry[r]];
    const Reason on_entry = b == cfg_.rpo[0] ? Reason::kReceiver : Reason::kAvailableAllPaths;
    for (std::size_t w = 0; w < W; ++w) {
      for (std::uint64_t bits = in[w]; bits != 0; bits &= bits - 1) {
        const ValueId root = cur[w * 64 + static_cast<unsigned>(std::countr_zero(bits))];
        mark[root] = s;
        origin[root] = {kNoSite, on_entry};
      }
    }
    std::uint8_t found = 0;
    AccessDecision* dec = out_->accesses.data() + decision_first_[b];
    const std::uint8_t gc_flag = exact_ ? FunctionShape::kMayGc : 0;
    const std::uint8_t alloc_flag = options_.allocation_marks ? FunctionShape::kAllocates : 0;
    for (InstrId k = shape_.block_begin[b], last = shape_.block_begin[b + 1]; k < last; ++k) {
      // In the order of the instruction's effects: its accesses, a GC point, its definition
      // (a fresh or marked result) and its return.
      for (unsigned mask = accessed[k], slot = 0; mask != 0; mask >>= 1, ++slot) {
        if ((mask & 1u) == 0) continue;
        const ValueId v = copy_root[uses[use_begin[k] + slot]];
        if (mark[v] == s) {
          dec->kept = false;
          const GlobalPassScratch::Origin& o = origin[v];
          dec->because = o.site;
          dec->reason = o.site == kNoSite ? o.reason : Reason::kDominated;
          found |= kRemoved;
        } else {
          dec->kept = true;
          dec->because = kNoSite;
          dec->reason = Reason::kNotAvailable;
          mark[v] = s;
          origin[v] = {shape_.site[k], Reason::kDominated};
        }
        ++dec;
      }
      const std::uint8_t f = flags[k];
      if (f & gc_flag) s = new_stamp();
      if (dst[k] != kNoReg) cur[dst[k]] = copy_root[defs[k]];
      if (f & (alloc_flag | FunctionShape::kResultMarked)) {
        const ValueId v = copy_root[defs[k]];
        // Both: the returned-marked reason, as a call's result mark comes after its allocation.
        mark[v] = s;
        origin[v] = {kNoSite, (f & FunctionShape::kResultMarked) ? Reason::kReturnedMarked : Reason::kAllocated};
      }
      if (f & FunctionShape::kReturns) {
        found |= kReturns;
        if (mark[copy_root[uses[use_begin[k]]]] != s) found |= kUnmarkedReturn;
      }
    }
    block_flags_[i] = found;
    // The words are built in locals: one store each instead of a read-modify-write per register.
    for (std::size_t w = 0; w < W; ++w) {
      std::uint64_t bits = 0;
      const std::size_t end = std::min<std::size_t>(R, (w + 1) * 64);
      for (std::size_t r = w * 64; r < end; ++r) bits |= static_cast<std::uint64_t>(mark[cur[r]] == s) << (r % 64);
      out[w] = bits;
    }
  }

  const FunctionShape& shape_;
  const Cfg& cfg_;
  const SsaForm& ssa_;
  const ElimOptions& options_;
  ElimResult* out_;
  const std::uint32_t* decision_first_;
  std::uint32_t R_ = 0;
  std::size_t W_ = 0;
  bool exact_ = true;
  GlobalPassScratch& scratch_;
  std::uint32_t& stamp_;
  std::vector<std::uint32_t>& mark_;
  std::vector<GlobalPassScratch::Origin>& origin_;
  std::vector<ValueId>& cur_;
  std::vector<std::uint64_t>& out_bits_;
  std::vector<std::uint8_t>& block_flags_;  // by RPO index
};

// kAuto: large functions only, where the arrays leave the caches and the layout's copy costs
// less than the scattered walks it saves (bench_elim, docs/results.md).
bool may_lay_out(ElimOptions::Layout layout, const FunctionShape& shape) {
  switch (layout) {
    case ElimOptions::Layout::kAsGiven: return false;
    case ElimOptions::Layout::kRpo: return true;
    case ElimOptions::Layout::kAuto: break;
  }
  return shape.num_instrs() >= ElimOptions::kLayoutMinInstrs;
}

void mark_unreachable(std::span<const BlockId> blocks, ElimResult& out) {
  for (BlockId b : blocks) {
    for (std::uint32_t d = out.block_first[b]; d < out.block_first[b + 1]; ++d) out.accesses[d].reason = Reason::kUnreachable;
  }
}

}  // namespace

bool GlobalElimPass::run(const Function&, FunctionAnalyses& am, ElimResult* out) { return run(am, out); }

bool GlobalElimPass::run(FunctionAnalyses& am, ElimResult* out) {
  make_all_kept(am.shape(), *out);
  out->pass = PassKind::kGlobal;
  out->safepoints = options_.safepoints;
  out->allocation_marks = options_.allocation_marks;
  out->receiver_marked = options_.receiver_marked;
  out->roots_marked = options_.roots_marked;
  // The solver decides every access of a reachable block; those of the others stay kept.
  LayoutScratch& scratch = am.scratch().layout;
  if (may_lay_out(options_.layout, am.shape()) &&
      lay_out_in_rpo(am.shape(), scratch.layout, options_.layout == ElimOptions::Layout::kAuto)) {
    const RpoLayout& layout = scratch.layout;
    mark_unreachable(std::span(layout.old_of).subspan(layout.num_reachable), *out);
    // The solver walks the copy and writes each block's decisions where the original's are.
    scratch.decision_first.resize(layout.old_of.size());
    for (BlockId i = 0; i < layout.old_of.size(); ++i) scratch.decision_first[i] = out->block_first[layout.old_of[i]];
    // The copy's analyses use the manager's arrays; the original's are recomputed on demand.
    // The manager answers for the original again however the solver returns.
    struct Rebind {
      FunctionAnalyses& am;
      FunctionAnalyses::Binding original;
      ~Rebind() { am.rebind(original); }
    } rebind{am, am.binding()};
    am.reset_in_rpo(layout.shape, layout.num_reachable);
    return GlobalSolver(am, options_, out, scratch.decision_first.data()).run();
  }
  mark_unreachable(am.cfg().unreachable, *out);
  return GlobalSolver(am, options_, out, out->block_first.data()).run();
}

}  // namespace objprof::ir
