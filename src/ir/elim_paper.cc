// The paper's redundant-barrier elimination (seed 000, "Removing redundant instrumentation",
// Fig. 3c and Fig. 4): a preorder walk of the dominator tree with one bit per register. A
// block's bits start as its immediate dominator's final bits minus the registers that have a
// phi at the block; an access with the bit set is omitted, otherwise instrumented and the bit
// set; a definition clears the bit. The walk keeps the bits in one array with an undo log
// (the scoped-table shape of EarlyCSE), so memory is O(registers + log), not O(blocks x regs).
// The bit array stores the site that set it, which is the "dominated by" answer.
#include "objprof/ir/elim.h"

namespace objprof::ir {
namespace {

class PaperWalk {
 public:
  PaperWalk(const Function& f, FunctionAnalyses& am, const ElimOptions& options, ElimResult* out)
      : f_(f), cfg_(am.cfg()), dt_(am.domtree()), ssa_(am.ssa()), options_(options), out_(out) {}

  bool run() {
    if (cfg_.rpo.empty()) return false;
    const std::size_t n = f_.blocks.size();
    exact_ = options_.safepoints == SafepointMode::kExact;
    if (exact_) {
      block_gc_.assign(n, 0);
      for (BlockId b = 0; b < n; ++b) {
        for (const Instr& in : f_.blocks[b].instrs) block_gc_[b] |= may_gc(in) ? 1 : 0;
      }
      visit_stamp_.assign(n, kNoBlock);
    }
    setter_.assign(f_.num_regs, kNoSite);
    struct Frame {
      BlockId block;
      std::uint32_t next_child;
      std::size_t undo_mark;
    };
    std::vector<Frame> stack;
    BlockId entry = cfg_.rpo[0];
    stack.push_back({entry, 0, undo_.size()});
    visit(entry);
    while (!stack.empty()) {
      Frame& fr = stack.back();
      const auto kids = dt_.children[fr.block];
      if (fr.next_child < kids.size()) {
        BlockId c = kids[fr.next_child++];
        stack.push_back({c, 0, undo_.size()});
        visit(c);
        continue;
      }
      while (undo_.size() > fr.undo_mark) {
        setter_[undo_.back().first] = undo_.back().second;
        undo_.pop_back();
      }
      stack.pop_back();
    }
    return changed_;
  }

 private:
  void set(Reg r, SiteId s) {
    if (setter_[r] == s) return;
    undo_.emplace_back(r, setter_[r]);
    setter_[r] = s;
  }
  void clear_all() {
    for (Reg r = 0; r < setter_.size(); ++r) set(r, kNoSite);
  }

  // Exact mode: may a GC run on some path from the end of idom(b) to the start of b? Walks
  // predecessors backwards from b without crossing idom(b); gives up (answers yes) after
  // `paper_region_budget` blocks.
  bool gc_between_idom_and(BlockId b) {
    BlockId stop = dt_.idom[b];
    work_.clear();
    std::uint32_t visited = 0;
    for (BlockId p : cfg_.preds[b]) {
      if (p != stop && cfg_.reachable(p) && visit_stamp_[p] != b) {
        visit_stamp_[p] = b;
        work_.push_back(p);
      }
    }
    while (!work_.empty()) {
      BlockId x = work_.back();
      work_.pop_back();
      if (block_gc_[x] || ++visited > options_.paper_region_budget) return true;
      for (BlockId p : cfg_.preds[x]) {
        if (p != stop && cfg_.reachable(p) && visit_stamp_[p] != b) {
          visit_stamp_[p] = b;
          work_.push_back(p);
        }
      }
    }
    return false;
  }

  void visit(BlockId b) {
    if (dt_.idom[b] != kNoBlock && exact_ && gc_between_idom_and(b)) clear_all();
    for (const auto& phi : ssa_.phis[b]) set(phi.reg, kNoSite);
    const Block& block = f_.blocks[b];
    std::uint32_t d = out_->block_first[b];
    for (std::uint32_t i = 0; i < block.instrs.size(); ++i) {
      const Instr& in = block.instrs[i];
      unsigned na = num_accesses(in);
      for (unsigned k = 0; k < na; ++k, ++d) {
        AccessDecision& dec = out_->accesses[d];
        Reg r = in.args[k];
        if (setter_[r] != kNoSite) {
          dec.kept = false;
          dec.reason = Reason::kDominated;
          dec.because = setter_[r];
          changed_ = true;
        } else {
          dec.kept = true;
          dec.reason = Reason::kNotAvailable;
          set(r, in.site);
        }
      }
      if (exact_ && may_gc(in)) clear_all();
      if (in.dst != kNoReg) set(in.dst, kNoSite);
    }
  }

  const Function& f_;
  const Cfg& cfg_;
  const DomTree& dt_;
  const SsaForm& ssa_;
  const ElimOptions& options_;
  ElimResult* out_;
  bool exact_ = true;
  bool changed_ = false;
  std::vector<SiteId> setter_;
  std::vector<std::pair<Reg, SiteId>> undo_;
  std::vector<std::uint8_t> block_gc_;
  std::vector<BlockId> visit_stamp_;
  std::vector<BlockId> work_;
};

}  // namespace

bool PaperElimPass::run(const Function& f, FunctionAnalyses& am, ElimResult* out) {
  *out = make_all_kept(f);
  out->pass = PassKind::kPaper;
  out->safepoints = options_.safepoints;
  for (AccessDecision& d : out->accesses) {
    bool reach = am.cfg().reachable(d.block);
    d.reason = reach ? Reason::kNotAvailable : Reason::kUnreachable;
  }
  return PaperWalk(f, am, options_, out).run();
}

}  // namespace objprof::ir
