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

#include <algorithm>

namespace objprof::ir {
namespace {

class GlobalSolver {
 public:
  GlobalSolver(const Function& f, FunctionAnalyses& am, const ElimOptions& options, ElimResult* out)
      : f_(f), cfg_(am.cfg()), ssa_(am.ssa()), options_(options), out_(out) {}

  bool run() {
    if (cfg_.rpo.empty()) return false;
    const std::size_t n = f_.blocks.size();
    R_ = f_.num_regs;
    W_ = (R_ + 63) / 64;
    exact_ = options_.safepoints == SafepointMode::kExact;
    mark_.assign(ssa_.values.size(), 0);
    origin_.assign(ssa_.values.size(), kNoSite);
    cur_.resize(R_);
    compile_steps();
    // Greatest fixed point: start from "everything available" except at the entry.
    out_bits_.assign(n * W_, ~0ull);
    std::vector<std::uint64_t> in(W_), out(W_);
    BlockId entry = cfg_.rpo[0];
    // Sweeps in RPO over the blocks whose predecessors changed; another sweep is needed only
    // when a change flows along a back edge.
    std::vector<std::uint8_t> dirty(n, 0);
    for (BlockId b : cfg_.rpo) dirty[b] = 1;
    bool again = true;
    while (again) {
      again = false;
      for (BlockId b : cfg_.rpo) {
        if (!dirty[b]) continue;
        dirty[b] = 0;
        meet(b, entry, in.data());
        transfer(b, in.data(), out.data(), false);
        std::uint64_t* stored = out_bits_.data() + static_cast<std::size_t>(b) * W_;
        if (!std::equal(out.begin(), out.end(), stored)) {
          std::copy(out.begin(), out.end(), stored);
          for (BlockId s : cfg_.succs[b]) {
            dirty[s] = 1;
            if (cfg_.rpo_index[s] <= cfg_.rpo_index[b]) again = true;
          }
        }
      }
    }
    for (BlockId b : cfg_.rpo) {
      meet(b, entry, in.data());
      transfer(b, in.data(), out.data(), true);
    }
    return removed_any_;
  }

 private:
  void meet(BlockId b, BlockId entry, std::uint64_t* in) {
    if (b == entry) {
      std::fill(in, in + W_, 0ull);
      return;
    }
    std::fill(in, in + W_, ~0ull);
    for (BlockId p : cfg_.preds[b]) {
      if (!cfg_.reachable(p)) continue;
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

  void transfer(BlockId b, const std::uint64_t* in, std::uint64_t* out, bool record) {
    std::uint32_t s = new_stamp();
    const std::size_t base = static_cast<std::size_t>(b) * R_;
    for (Reg r = 0; r < R_; ++r) {
      ValueId v = ssa_.entry_values[base + r];
      cur_[r] = v;
      if ((in[r / 64] >> (r % 64)) & 1) {
        ValueId root = ssa_.copy_root[v];
        mark_[root] = s;
        origin_[root] = kNoSite;
      }
    }
    std::uint32_t d = record ? out_->block_first[b] : 0;
    for (std::uint32_t k = step_begin_[b]; k < step_begin_[b + 1]; ++k) {
      const Step& st = steps_[k];
      switch (st.kind) {
        case Step::kAccess: {
          bool available = mark_[st.value] == s;
          if (record) {
            AccessDecision& dec = out_->accesses[d++];
            if (available) {
              dec.kept = false;
              dec.because = origin_[st.value];
              dec.reason = dec.because == kNoSite ? Reason::kAvailableAllPaths : Reason::kDominated;
              removed_any_ = true;
            } else {
              dec.kept = true;
              dec.reason = Reason::kNotAvailable;
            }
          }
          if (!available) {
            mark_[st.value] = s;
            origin_[st.value] = st.site;
          }
          break;
        }
        case Step::kGc: s = new_stamp(); break;
        case Step::kDef: cur_[st.reg] = st.value; break;
      }
    }
    std::fill(out, out + W_, 0ull);
    for (Reg r = 0; r < R_; ++r) {
      if (mark_[ssa_.copy_root[cur_[r]]] == s) out[r / 64] |= 1ull << (r % 64);
    }
  }

  // The block bodies reduced to what the transfer function needs, so that the fixed-point
  // sweeps read a dense array instead of the instructions.
  struct Step {
    enum Kind : std::uint8_t { kAccess, kGc, kDef } kind;
    Reg reg;        // kDef: the register defined
    ValueId value;  // kAccess: copy root of the accessed value; kDef: the defined value
    SiteId site;    // kAccess
  };
  void compile_steps() {
    const std::size_t n = f_.blocks.size();
    step_begin_.assign(n + 1, 0);
    steps_.clear();
    steps_.reserve(f_.num_instrs());
    for (BlockId b = 0; b < n; ++b) {
      step_begin_[b] = static_cast<std::uint32_t>(steps_.size());
      if (!cfg_.reachable(b)) continue;
      const Block& block = f_.blocks[b];
      for (std::uint32_t i = 0; i < block.instrs.size(); ++i) {
        const Instr& ins = block.instrs[i];
        unsigned na = num_accesses(ins);
        for (unsigned k = 0; k < na; ++k) {
          steps_.push_back({Step::kAccess, kNoReg, ssa_.copy_root[ssa_.use(b, i, k)], ins.site});
        }
        if (exact_ && may_gc(ins)) steps_.push_back({Step::kGc, kNoReg, kNoValue, kNoSite});
        if (ins.dst != kNoReg) steps_.push_back({Step::kDef, ins.dst, ssa_.def(b, i), kNoSite});
      }
    }
    step_begin_[n] = static_cast<std::uint32_t>(steps_.size());
  }

  const Function& f_;
  const Cfg& cfg_;
  const SsaForm& ssa_;
  const ElimOptions& options_;
  ElimResult* out_;
  std::uint32_t R_ = 0;
  std::size_t W_ = 0;
  bool exact_ = true;
  bool removed_any_ = false;
  std::uint32_t stamp_ = 0;
  std::vector<std::uint32_t> mark_;
  std::vector<SiteId> origin_;
  std::vector<ValueId> cur_;
  std::vector<std::uint64_t> out_bits_;
  std::vector<Step> steps_;
  std::vector<std::uint32_t> step_begin_;
};

}  // namespace

bool GlobalElimPass::run(const Function& f, FunctionAnalyses& am, ElimResult* out) {
  *out = make_all_kept(f);
  out->pass = PassKind::kGlobal;
  out->safepoints = options_.safepoints;
  for (AccessDecision& d : out->accesses) {
    d.reason = am.cfg().reachable(d.block) ? Reason::kNotAvailable : Reason::kUnreachable;
  }
  return GlobalSolver(f, am, options_, out).run();
}

}  // namespace objprof::ir
