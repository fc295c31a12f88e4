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

namespace objprof::ir {
namespace {

class GlobalSolver {
 public:
  GlobalSolver(FunctionAnalyses& am, const ElimOptions& options, ElimResult* out)
      : shape_(am.shape()),
        cfg_(am.cfg()),
        ssa_(am.ssa()),
        options_(options),
        out_(out),
        scratch_(am.scratch().global),
        stamp_(scratch_.stamp),
        mark_(scratch_.mark),
        origin_(scratch_.origin),
        cur_(scratch_.cur),
        out_bits_(scratch_.out_bits),
        steps_(scratch_.steps),
        step_begin_(scratch_.step_begin),
        gen_(scratch_.gen),
        keep_(scratch_.keep),
        extra_(scratch_.extra),
        extra_begin_(scratch_.extra_begin) {}

  bool run() {
    if (cfg_.rpo.empty()) return false;
    const std::size_t n = shape_.num_blocks();
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
    compile_and_summarize();
    // Greatest fixed point: start from "everything available" except at the entry.
    out_bits_.assign(n * W_, ~0ull);
    std::vector<std::uint64_t>& in = scratch_.in;
    std::vector<std::uint64_t>& out = scratch_.out;
    in.resize(W_);
    out.resize(W_);
    BlockId entry = cfg_.rpo[0];
    // Sweeps in RPO over the blocks whose predecessors changed; another sweep is needed only
    // when a change flows along a back edge.
    std::vector<std::uint8_t>& dirty = scratch_.dirty;
    dirty.assign(n, 0);
    for (BlockId b : cfg_.rpo) dirty[b] = 1;
    bool again = true;
    while (again) {
      again = false;
      for (BlockId b : cfg_.rpo) {
        if (!dirty[b]) continue;
        dirty[b] = 0;
        meet(b, entry, in.data());
        transfer_summary(b, in.data(), out.data());
        std::uint64_t* stored = out_bits_.data() + static_cast<std::size_t>(b) * W_;
        // A word loop, not std::equal: that is a memcmp call per visit for one or two words.
        bool changed = false;
        for (std::size_t w = 0; w < W_; ++w) {
          changed |= out[w] != stored[w];
          stored[w] = out[w];
        }
        if (changed) {
          for (BlockId s : cfg_.succs[b]) {
            dirty[s] = 1;
            if (cfg_.rpo_index[s] <= cfg_.rpo_index[b]) again = true;
          }
        }
      }
    }
    // One full transfer per block records the decisions. At the fixed point it reproduces every
    // block's stored exit facts (the summaries are exact, not an approximation); with
    // `self_check` (tests) it recomputes them and aborts on a difference, a bug in objprof.
    for (BlockId b : cfg_.rpo) {
      meet(b, entry, in.data());
      if (!options_.self_check) {
        record(b, in.data(), nullptr);
        continue;
      }
      record(b, in.data(), out.data());
      if (!std::equal(out.begin(), out.end(), out_bits_.data() + static_cast<std::size_t>(b) * W_)) {
        std::fprintf(stderr, "objprof: global pass self-check: block %u's summary disagrees with its transfer\n", b);
        std::abort();
      }
    }
    out_->returns_marked = returns_ > 0 && !unmarked_returns_;
    return removed_any_;
  }

 private:
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

  // The full transfer of one block at the fixed point: records each access's decision. Only
  // the registers available on entry are visited. `out` (the block's exit facts) is computed
  // when `out` is non-null, to check the summaries against it.
  void record(BlockId b, const std::uint64_t* in, std::uint64_t* out) {
    std::uint32_t s = new_stamp();
    const std::size_t base = static_cast<std::size_t>(b) * R_;
    for (std::size_t w = 0; w < W_; ++w) {
      for (std::uint64_t bits = in[w]; bits != 0; bits &= bits - 1) {
        const std::size_t r = w * 64 + static_cast<unsigned>(std::countr_zero(bits));
        ValueId root = ssa_.copy_root[ssa_.entry_values[base + r]];
        mark_[root] = s;
        origin_[root] = {kNoSite, b == cfg_.rpo[0] ? Reason::kReceiver : Reason::kAvailableAllPaths};
      }
    }
    std::uint32_t d = out_->block_first[b];
    for (std::uint32_t k = step_begin_[b]; k < step_begin_[b + 1]; ++k) {
      const Step& st = steps_[k];
      switch (st.kind) {
        case Step::kAccess: {
          AccessDecision& dec = out_->accesses[d++];
          if (mark_[st.value] == s) {
            dec.kept = false;
            const GlobalPassScratch::Origin& o = origin_[st.value];
            dec.because = o.site;
            dec.reason = o.site == kNoSite ? o.reason : Reason::kDominated;
            removed_any_ = true;
          } else {
            dec.kept = true;
            dec.reason = Reason::kNotAvailable;
            mark_[st.value] = s;
            origin_[st.value] = {st.site, Reason::kDominated};
          }
          break;
        }
        case Step::kGc: s = new_stamp(); break;
        case Step::kDef: break;
        case Step::kMark:
        case Step::kMarkResult:
          mark_[st.value] = s;
          origin_[st.value] = {kNoSite, st.kind == Step::kMark ? Reason::kAllocated : Reason::kReturnedMarked};
          break;
        case Step::kReturn:
          ++returns_;
          if (mark_[st.value] != s) unmarked_returns_ = true;
          break;
      }
    }
    if (out == nullptr) return;
    for (Reg r = 0; r < R_; ++r) cur_[r] = ssa_.copy_root[ssa_.entry_values[base + r]];
    for (std::uint32_t k = step_begin_[b]; k < step_begin_[b + 1]; ++k) {
      if (steps_[k].kind == Step::kDef) cur_[steps_[k].reg] = steps_[k].value;
    }
    std::fill(out, out + W_, 0ull);
    for (Reg r = 0; r < R_; ++r) {
      if (mark_[cur_[r]] == s) out[r / 64] |= 1ull << (r % 64);
    }
  }

  // The transfer function of every block in closed form, for the fixed-point sweeps:
  //   out = gen | (in & keep) | { r' : in[r] for an extra pair (r', r) }
  // gen: the registers whose object at the exit was accessed after the block's last GC point.
  // keep and the extra pairs exist only in blocks without a GC point: exit register r' is
  // available if some entry register r was and r held, at the entry, the object r' holds at
  // the exit (the same copy root); r' == r goes to `keep`, other pairs (copies) are listed.
  // A sweep then costs a few words per block instead of a walk over its instructions.
  //
  // Each block's steps are compiled and summarized in one visit, while they are in cache.
  void compile_and_summarize() {
    const std::size_t n = shape_.num_blocks();
    step_begin_.assign(n + 1, 0);
    steps_.clear();
    steps_.reserve(shape_.num_instrs() + shape_.num_instrs() / 2);
    // Every reachable block's words are written below; unreachable ones are never read.
    gen_.resize(n * W_);
    keep_.resize(n * W_);
    extra_begin_.assign(n + 1, 0);
    extra_.clear();
    // Entry stamps grow across blocks and functions, so the slots are never cleared.
    scratch_.entry_slot.resize(ssa_.values.size(), {0, kNoReg});
    scratch_.next_same_root.assign(R_, kNoReg);
    scratch_.entry_root.resize(R_);
    for (BlockId b = 0; b < n; ++b) {
      step_begin_[b] = static_cast<std::uint32_t>(steps_.size());
      extra_begin_[b] = static_cast<std::uint32_t>(extra_.size());
      if (!cfg_.reachable(b)) continue;
      const bool gc = compile_steps(b);
      summarize(b, gc);
    }
    step_begin_[n] = static_cast<std::uint32_t>(steps_.size());
    extra_begin_[n] = static_cast<std::uint32_t>(extra_.size());
  }

  [[gnu::noinline]] void summarize(BlockId b, bool gc) {
    // Locals, not members: the loops below store 32-bit words, which the compiler must
    // otherwise assume may change R_ or a vector's size, and reload them per register.
    const std::uint32_t R = R_;
    const std::size_t W = W_;
    const ValueId* copy_root = ssa_.copy_root.data();
    const ValueId* entry = ssa_.entry_values.data() + static_cast<std::size_t>(b) * R;
    std::uint32_t* mark = mark_.data();
    GlobalPassScratch::EntrySlot* slot = scratch_.entry_slot.data();
    Reg* next = scratch_.next_same_root.data();
    ValueId* er = scratch_.entry_root.data();
    ValueId* cur = cur_.data();
    std::uint64_t* gen = gen_.data() + static_cast<std::size_t>(b) * W;
    std::uint64_t* keep = keep_.data() + static_cast<std::size_t>(b) * W;
    // cur: each register's copy root, from the entry to the exit (a def's step carries its
    // value's root). er: the entry's, grouped by root (head/next) where there is no GC point.
    std::uint32_t bs = 0;
    bool shared = false;  // two entry registers hold one root
    if (gc) {
      for (Reg r = 0; r < R; ++r) cur[r] = copy_root[entry[r]];
    } else {
      if (++scratch_.entry_epoch == 0) {  // wrapped: forget every stamp
        std::fill(scratch_.entry_slot.begin(), scratch_.entry_slot.end(), GlobalPassScratch::EntrySlot{0, kNoReg});
        scratch_.entry_epoch = 1;
      }
      bs = scratch_.entry_epoch;
      for (Reg r = 0; r < R; ++r) {
        const ValueId root = copy_root[entry[r]];
        cur[r] = er[r] = root;
        GlobalPassScratch::EntrySlot& e = slot[root];
        next[r] = kNoReg;
        if (e.stamp == bs) {
          next[r] = e.head;
          shared = true;
        }
        e = {bs, r};
      }
    }
    std::uint32_t s = new_stamp();
    for (std::uint32_t k = step_begin_[b], end = static_cast<std::uint32_t>(steps_.size()); k < end; ++k) {
      const Step& st = steps_[k];
      switch (st.kind) {
        case Step::kAccess:
        case Step::kMark:
        case Step::kMarkResult: mark[st.value] = s; break;
        case Step::kReturn: break;
        case Step::kGc: s = new_stamp(); break;
        case Step::kDef: cur[st.reg] = st.value; break;
      }
    }
    // The words are built in locals: one store each instead of a read-modify-write per register.
    for (std::size_t w = 0; w < W; ++w) {
      std::uint64_t g = 0, kp = 0;
      const std::size_t end = std::min<std::size_t>(R, (w + 1) * 64);
      for (std::size_t r = w * 64; r < end; ++r) {
        const ValueId root = cur[r];
        const std::uint64_t bit = 1ull << (r % 64);
        if (mark[root] == s) {
          g |= bit;
        } else if (gc) {
          // A GC point ends every availability from the entry.
        } else if (root == er[r] && !shared) {
          kp |= bit;  // the register's own entry object, which no other entry register holds
        } else if (slot[root].stamp == bs) {
          kp |= add_pairs(static_cast<Reg>(r), slot[root].head, next);
        }
      }
      gen[w] = g;
      keep[w] = kp;
    }
  }

  // The entry registers on the chain from `src` hold exit register r's object: r itself
  // becomes r's keep bit (returned), the others extra pairs. Rare (copies and registers that
  // share an object), so out of the summary's register loop.
  [[gnu::noinline]] std::uint64_t add_pairs(Reg r, Reg src, const Reg* next) {
    std::uint64_t kp = 0;
    for (; src != kNoReg; src = next[src]) {
      if (src == r) {
        kp = 1ull << (r % 64);
      } else {
        extra_.emplace_back(r, src);
      }
    }
    return kp;
  }

  void transfer_summary(BlockId b, const std::uint64_t* in, std::uint64_t* out) const {
    const std::uint64_t* gen = gen_.data() + static_cast<std::size_t>(b) * W_;
    const std::uint64_t* keep = keep_.data() + static_cast<std::size_t>(b) * W_;
    for (std::size_t w = 0; w < W_; ++w) out[w] = gen[w] | (in[w] & keep[w]);
    for (std::uint32_t k = extra_begin_[b]; k < extra_begin_[b + 1]; ++k) {
      auto [dst, src] = extra_[k];
      if ((in[src / 64] >> (src % 64)) & 1) out[dst / 64] |= 1ull << (dst % 64);
    }
  }

  using Step = GlobalPassScratch::Step;
  // Appends block b's steps; says whether one is a GC point.
  bool compile_steps(BlockId b) {
    bool gc = false;
    for (InstrId k = shape_.block_begin[b]; k < shape_.block_begin[b + 1]; ++k) {
      for (unsigned mask = shape_.accessed[k], slot = 0; mask != 0; mask >>= 1, ++slot) {
        if (mask & 1u) {
          steps_.push_back({Step::kAccess, kNoReg, ssa_.copy_root[ssa_.uses[shape_.use_begin[k] + slot]], shape_.site[k]});
        }
      }
      if (exact_ && shape_.may_gc(k)) {
        steps_.push_back({Step::kGc, kNoReg, kNoValue, kNoSite});
        gc = true;
      }
      if (shape_.dst[k] != kNoReg) steps_.push_back({Step::kDef, shape_.dst[k], ssa_.copy_root[ssa_.defs[k]], kNoSite});
      if (options_.allocation_marks && shape_.allocates(k)) {
        steps_.push_back({Step::kMark, kNoReg, ssa_.copy_root[ssa_.defs[k]], kNoSite});
      }
      if (shape_.result_marked(k)) steps_.push_back({Step::kMarkResult, kNoReg, ssa_.copy_root[ssa_.defs[k]], kNoSite});
      if (shape_.returns_value(k)) {
        steps_.push_back({Step::kReturn, kNoReg, ssa_.copy_root[ssa_.uses[shape_.use_begin[k]]], kNoSite});
      }
    }
    return gc;
  }

  const FunctionShape& shape_;
  const Cfg& cfg_;
  const SsaForm& ssa_;
  const ElimOptions& options_;
  ElimResult* out_;
  std::uint32_t R_ = 0;
  std::size_t W_ = 0;
  bool exact_ = true;
  bool removed_any_ = false;
  std::size_t returns_ = 0;        // reachable returns of a value
  bool unmarked_returns_ = false;  // one of them may return an unmarked object
  GlobalPassScratch& scratch_;
  std::uint32_t& stamp_;
  std::vector<std::uint32_t>& mark_;
  std::vector<GlobalPassScratch::Origin>& origin_;
  std::vector<ValueId>& cur_;
  std::vector<std::uint64_t>& out_bits_;
  std::vector<Step>& steps_;
  std::vector<std::uint32_t>& step_begin_;
  std::vector<std::uint64_t>& gen_;                 // per block, W_ words each
  std::vector<std::uint64_t>& keep_;
  std::vector<std::pair<Reg, Reg>>& extra_;         // (exit register, entry register) pairs
  std::vector<std::uint32_t>& extra_begin_;         // per block + 1, into extra_
};

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
  const Cfg& cfg = am.cfg();
  for (BlockId b : cfg.unreachable) {
    for (std::uint32_t d = out->block_first[b]; d < out->block_first[b + 1]; ++d) out->accesses[d].reason = Reason::kUnreachable;
  }
  return GlobalSolver(am, options_, out).run();
}

}  // namespace objprof::ir
