// The soundness checker. Each run is recorded as a tape: the blocks visited and the random
// draws each block consumed (object identities, GC or not). A run can be replayed exactly from
// its tape, which is what the shrinker uses: it cuts cycles out of the block sequence and turns
// GCs off while the replay still violates, then reports the shortest tape it found.
#include "objprof/ir/checker.h"

#include "objprof/ir/analysis.h"
#include "objprof/ir/function_shape.h"
#include "splitmix64.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <span>

namespace objprof::ir {
namespace {

constexpr std::uint64_t kNull = 0;
constexpr std::uint64_t kScalar = 1;
constexpr std::uint64_t kFirstObject = 2;
constexpr std::uint64_t kNoGcDraw = 99;  // a GC draw that never collects (for gc_percent < 100)

using Rng = SplitMix64;

struct Step {
  BlockId block;
  std::uint32_t draw_begin;
  std::uint32_t draw_end;
};

struct Tape {
  std::vector<Step> steps;
  std::vector<std::uint64_t> draws;
  std::vector<std::uint8_t> draw_is_gc;
  std::uint32_t entry_draws = 0;  // draws before the first step (initial registers)
};

struct Outcome {
  bool violated = false;
  Violation violation{};
  std::size_t violation_step = 0;
  bool valid = true;  // false: a forced replay followed an edge that does not exist
};

// What every checker machine shares: the run loop, the tape, the random draws, the marks, the
// GCs and the root marks. `Code` (CRTP) is the function being run: objprof's IR (IrMachine)
// or a VM's FunctionShape (ShapeMachine). It provides num_blocks(), num_regs(), succs(b),
// receiver(), block_size(b), dst(b, i), for_each_use(b, i, fn) and run_block(b, out, gc_here).
template <class Code>
class MachineBase {
 public:
  // Records a fresh random run into `tape` (record mode) or replays `tape` (forced mode).
  Outcome execute(Tape* tape, bool forced, Rng* rng, std::vector<PathStep>* trace) {
    Outcome out;
    forced_ = forced;
    tape_ = tape;
    rng_ = rng;
    draw_pos_ = 0;
    if (!forced) {
      tape->steps.clear();
      tape->draws.clear();
      tape->draw_is_gc.clear();
    }
    epoch_ = ++clock_;
    cache_ = kNull;
    next_object_ = kFirstObject + externals_;
    for (Reg r = 0; r < code().num_regs(); ++r) {
      std::uint64_t x = draw(false);
      std::uint64_t pct = x % 100;
      regs_[r] = pct < 85 ? kFirstObject + (x >> 8) % externals_ : pct < 95 ? kScalar : kNull;
    }
    if (options_.receiver_marked && code().receiver() != kNoReg) {
      // A receiver is never null, and the caller's invoke marked it in this epoch.
      Reg self = code().receiver();
      if (regs_[self] < kFirstObject) regs_[self] = kFirstObject;
      mark(regs_[self]);
    }
    if (!forced) tape->entry_draws = static_cast<std::uint32_t>(tape->draws.size());
    BlockId b = 0;
    for (std::size_t step = 0;; ++step) {
      if (forced) {
        if (step >= tape->steps.size()) break;
        BlockId want = tape->steps[step].block;
        if (step == 0 ? want != 0 : !is_succ(b, want)) {
          out.valid = false;
          return out;
        }
        b = want;
      } else {
        tape->steps.push_back({b, static_cast<std::uint32_t>(tape->draws.size()), 0});
      }
      if (report_ != nullptr) ++report_->steps;
      bool gc_here = false;
      bool stop = code().run_block(b, &out, &gc_here);
      if (!forced) tape->steps.back().draw_end = static_cast<std::uint32_t>(tape->draws.size());
      if (trace != nullptr) trace->push_back({b, gc_here});
      if (out.violated) {
        out.violation_step = step;
        return out;
      }
      if (stop) break;
      if (!forced) {
        const auto succs = code().succs(b);
        if (succs.empty() || step + 1 >= max_steps_) break;
        b = succs[rng_->next() % succs.size()];
      }
    }
    return out;
  }

 protected:
  MachineBase(const CheckOptions& options, CheckReport* report) : options_(options), report_(report) {}
  // After the derived class is built (its code is ready).
  void init(std::size_t num_instrs) {
    regs_.resize(code().num_regs());
    if (options_.roots_marked) compute_liveness();
    max_steps_ = options_.max_steps != 0
                     ? options_.max_steps
                     : static_cast<std::uint32_t>(std::min<std::size_t>(4 * code().num_blocks() + 16, 100000));
    externals_ = std::max<std::uint32_t>(1, options_.external_objects);
    kept_.assign(num_instrs, 0);
  }
  Code& code() { return static_cast<Code&>(*this); }
  const Code& code() const { return static_cast<const Code&>(*this); }

  bool is_succ(BlockId from, BlockId to) const {
    const auto s = code().succs(from);
    return std::find(s.begin(), s.end(), to) != s.end();
  }

  std::uint64_t draw(bool is_gc) {
    if (forced_) return draw_pos_ < tape_->draws.size() ? tape_->draws[draw_pos_++] : 0;
    std::uint64_t x = rng_->next();
    tape_->draws.push_back(x);
    tape_->draw_is_gc.push_back(is_gc ? 1 : 0);
    return x;
  }

  std::uint64_t random_object() {
    std::uint64_t x = draw(false);
    if (x % 100 < 5) return kNull;
    return kFirstObject + (x >> 8) % (next_object_ - kFirstObject);
  }

  bool marked(std::uint64_t obj) const { return obj < marked_.size() && marked_[obj] == epoch_; }
  void mark(std::uint64_t obj) {
    if (obj >= marked_.size()) marked_.resize(std::max<std::size_t>(obj + 1, marked_.size() * 2), 0);
    marked_[obj] = epoch_;
  }

  void maybe_gc(bool* gc_here) {
    std::uint64_t x = draw(true);
    if (!options_.gc_at_safepoints || x % 100 >= options_.gc_percent) return;
    epoch_ = ++clock_;
    cache_ = kNull;
    *gc_here = true;
    if (report_ != nullptr) ++report_->gcs;
    if (options_.roots_marked) mark_live_roots();
  }

  // One access of the object in register `reg` (operand k of instruction i of block b), with
  // the barrier if the decisions kept it: the object must then be marked.
  bool access(BlockId b, std::uint32_t i, unsigned k, SiteId site, Reg reg, bool kept, Outcome* out) {
    std::uint64_t obj = regs_[reg];
    if (obj < kFirstObject) return false;  // null or scalar: outside the heap, nothing to mark
    if (kept) {
      if (report_ != nullptr) ++report_->barriers;
      if (obj != cache_) {
        cache_ = obj;
        mark(obj);
      }
    }
    if (report_ != nullptr) ++report_->accesses;
    if (marked(obj)) return false;
    out->violated = true;
    out->violation = Violation{b, i, k, site, reg, obj, epoch_, {}};
    return true;
  }

  // Backward liveness over the CFG the runs follow, per block (live out), independent of the
  // pass's own analyses: a register is live after an instruction if some path from there reads
  // it before writing it.
  void compute_liveness() {
    const std::size_t n = code().num_blocks();
    words_ = (code().num_regs() + 63) / 64;
    live_out_.assign(n * words_, 0);
    std::vector<std::uint64_t> live_in(n * words_, 0), cur(words_);
    for (bool changed = true; changed;) {
      changed = false;
      for (std::size_t bi = n; bi-- > 0;) {
        const auto b = static_cast<BlockId>(bi);
        std::uint64_t* out = &live_out_[b * words_];
        for (BlockId s : code().succs(b))
          for (std::size_t w = 0; w < words_; ++w) out[w] |= live_in[s * words_ + w];
        std::copy(out, out + words_, cur.begin());
        for (std::uint32_t i = code().block_size(b); i-- > 0;) step_back(b, i, cur.data());
        for (std::size_t w = 0; w < words_; ++w) {
          if (cur[w] != live_in[b * words_ + w]) changed = true;
          live_in[b * words_ + w] = cur[w];
        }
      }
    }
  }
  static void set_bit(std::uint64_t* bits, Reg r) { bits[r / 64] |= 1ull << (r % 64); }
  static void clear_bit(std::uint64_t* bits, Reg r) { bits[r / 64] &= ~(1ull << (r % 64)); }
  // live before instruction i of block b from live after it.
  void step_back(BlockId b, std::uint32_t i, std::uint64_t* live) const {
    if (code().dst(b, i) != kNoReg) clear_bit(live, code().dst(b, i));
    code().for_each_use(b, i, [&](Reg a) { set_bit(live, a); });
  }

  // The GC at the current instruction (cur_block_, cur_instr_; a callee's GC counts at the call)
  // marks what the frame's live registers hold.
  void mark_live_roots() {
    roots_.assign(live_out_.begin() + cur_block_ * words_, live_out_.begin() + (cur_block_ + 1) * words_);
    for (std::uint32_t i = code().block_size(cur_block_); i-- > cur_instr_ + 1;) step_back(cur_block_, i, roots_.data());
    if (code().dst(cur_block_, cur_instr_) != kNoReg) clear_bit(roots_.data(), code().dst(cur_block_, cur_instr_));
    for (Reg r = 0; r < code().num_regs(); ++r)
      if (((roots_[r / 64] >> (r % 64)) & 1) && regs_[r] >= kFirstObject) mark(regs_[r]);
  }

  const CheckOptions& options_;
  CheckReport* report_;
  std::vector<std::uint8_t> kept_;  // per instruction: bit k = operand k's barrier was kept
  std::vector<std::uint64_t> regs_;
  std::vector<std::uint64_t> marked_;  // object -> epoch in which it was last marked
  std::uint32_t max_steps_ = 0;
  std::uint32_t externals_ = 1;
  // roots_marked: live registers after each block (words_ words per block), and the scratch
  // set of one GC's roots; the instruction executing now.
  std::size_t words_ = 0;
  std::vector<std::uint64_t> live_out_, roots_;
  BlockId cur_block_ = 0;
  std::uint32_t cur_instr_ = 0;
  std::uint64_t clock_ = 0;
  std::uint64_t epoch_ = 0;
  std::uint64_t cache_ = kNull;
  std::uint64_t next_object_ = kFirstObject;
  bool forced_ = false;
  Tape* tape_ = nullptr;
  Rng* rng_ = nullptr;
  std::size_t draw_pos_ = 0;
};

// objprof's IR: opcode semantics (constants are scalars, loads and calls return random objects,
// calls run their callees' GC points through a CallResolver).
class IrMachine : public MachineBase<IrMachine> {
 public:
  IrMachine(const Function& f, const ElimResult& decisions, const CheckOptions& options, CheckReport* report)
      : MachineBase(options, report), f_(f), cfg_(CfgAnalysis::run(f)) {
    instr_base_.resize(f.blocks.size() + 1);
    std::uint32_t k = 0;
    for (BlockId b = 0; b < f.blocks.size(); ++b) {
      instr_base_[b] = k;
      k += static_cast<std::uint32_t>(f.blocks[b].instrs.size());
    }
    instr_base_[f.blocks.size()] = k;
    init(k);
    for (const AccessDecision& d : decisions.accesses) {
      if (d.block < f.blocks.size() && d.kept) kept_[instr_base_[d.block] + d.instr] |= static_cast<std::uint8_t>(1u << d.operand);
    }
  }

 private:
  friend class MachineBase<IrMachine>;
  std::size_t num_blocks() const { return f_.blocks.size(); }
  Reg num_regs() const { return f_.num_regs; }
  std::span<const BlockId> succs(BlockId b) const { return cfg_.succs[b]; }
  Reg receiver() const { return f_.has_receiver && !f_.params.empty() ? f_.params[0] : kNoReg; }
  std::uint32_t block_size(BlockId b) const { return static_cast<std::uint32_t>(f_.blocks[b].instrs.size()); }
  Reg dst(BlockId b, std::uint32_t i) const { return f_.blocks[b].instrs[i].dst; }
  template <class Fn>
  void for_each_use(BlockId b, std::uint32_t i, Fn fn) const {
    for (Reg a : f_.blocks[b].instrs[i].args) fn(a);
  }

  // Executes one block; returns true when the function returned.
  bool run_block(BlockId b, Outcome* out, bool* gc_here) {
    const Block& block = f_.blocks[b];
    for (std::uint32_t i = 0; i < block.instrs.size(); ++i) {
      const Instr& in = block.instrs[i];
      cur_block_ = b;
      cur_instr_ = i;
      unsigned na = num_accesses(in);
      std::uint8_t kept = kept_[instr_base_[b] + i];
      for (unsigned k = 0; k < na; ++k)
        if (access(b, i, k, in.site, in.args[k], (kept >> k) & 1, out)) return true;
      switch (in.op) {
        case Opcode::kConst:
        case Opcode::kBinary:
        case Opcode::kCompare:
        case Opcode::kArrayLength:
        case Opcode::kRefEqual:
          regs_[in.dst] = kScalar;
          break;
        case Opcode::kNull: regs_[in.dst] = kNull; break;
        case Opcode::kMove: regs_[in.dst] = regs_[in.args[0]]; break;
        case Opcode::kNew:
        case Opcode::kNewArray:
          maybe_gc(gc_here);
          regs_[in.dst] = next_object_++;
          if (options_.allocation_marks) mark(regs_[in.dst]);
          break;
        case Opcode::kGetField:
        case Opcode::kArrayGet:
          regs_[in.dst] = random_object();
          break;
        case Opcode::kInvoke:
        case Opcode::kCallStatic:
          budget_ = options_.callee_budget;
          call(in, 0, gc_here);
          if (in.dst != kNoReg) {
            regs_[in.dst] = random_object();
            if (in.result_marked && regs_[in.dst] >= kFirstObject) mark(regs_[in.dst]);
          }
          break;
        case Opcode::kSafepoint: maybe_gc(gc_here); break;
        case Opcode::kReturn:
          if (options_.verify_returns && !in.args.empty()) {
            std::uint64_t obj = regs_[in.args[0]];
            if (obj >= kFirstObject && !marked(obj)) {
              out->violated = true;
              out->violation = Violation{b, i, 0, kNoSite, in.args[0], obj, epoch_, {}};
            }
          }
          return true;
        default: break;
      }
    }
    return false;
  }
  // A call: its callees' GC points when the resolver knows them, else its own flag.
  void call(const Instr& in, std::uint32_t depth, bool* gc_here) {
    if (options_.calls == nullptr) {
      if (in.may_gc) maybe_gc(gc_here);
      return;
    }
    if (callees_.size() <= depth) callees_.resize(depth + 1);
    std::vector<const Function*>& fs = callees_[depth];
    fs.clear();
    if (!options_.calls->callees(in, &fs) || fs.empty()) {
      if (in.may_gc) maybe_gc(gc_here);
      return;
    }
    if (depth >= options_.call_depth) return;
    run_callee(*fs[draw(false) % fs.size()], depth, gc_here);
  }

  // One random path through a callee, from its entry to a return (or until the budget of
  // instructions for this call runs out): GCs at its GC points, nested calls in turn. Its
  // accesses are not executed: the callee's barriers only ever add marks, so leaving them out
  // can only make a violation in the caller easier to find.
  void run_callee(const Function& g, std::uint32_t depth, bool* gc_here) {
    if (g.blocks.empty()) return;
    BlockId b = 0;
    for (;;) {
      const Block& block = g.blocks[b];
      for (const Instr& in : block.instrs) {
        if (budget_ == 0) return;
        --budget_;
        if (in.op == Opcode::kReturn) return;
        if (in.op == Opcode::kInvoke || in.op == Opcode::kCallStatic) {
          call(in, depth + 1, gc_here);
        } else if (may_gc(in)) {  // an allocation or a safepoint
          maybe_gc(gc_here);
        }
      }
      const auto& targets = block.instrs.back().targets;
      if (targets.empty()) return;
      BlockId next = targets[draw(false) % targets.size()];
      if (next >= g.blocks.size()) return;
      b = next;
    }
  }

  const Function& f_;
  std::vector<std::vector<const Function*>> callees_;  // per call depth
  std::uint32_t budget_ = 0;
  Cfg cfg_;
  std::vector<std::uint32_t> instr_base_;
};

// A VM's FunctionShape: a definition that is neither a copy nor an allocation holds a random
// object (what the VM loads or computes is unknown); kMayGc instructions may collect after
// their accesses, kAllocates ones after their GC hand out a fresh object, kResultMarked ones
// a marked object; kReturns ends the run (and is checked under verify_returns).
class ShapeMachine : public MachineBase<ShapeMachine> {
 public:
  ShapeMachine(const FunctionShape& s, const ElimResult& decisions, const CheckOptions& options, CheckReport* report)
      : MachineBase(options, report), s_(s) {
    init(s.num_instrs());
    for (const AccessDecision& d : decisions.accesses) {
      if (d.block < s.num_blocks() && d.kept && s.block_begin[d.block] + d.instr < s.num_instrs())
        kept_[s.block_begin[d.block] + d.instr] |= static_cast<std::uint8_t>(1u << d.operand);
    }
  }

 private:
  friend class MachineBase<ShapeMachine>;
  std::size_t num_blocks() const { return s_.num_blocks(); }
  Reg num_regs() const { return s_.num_regs; }
  std::span<const BlockId> succs(BlockId b) const { return s_.succs[b]; }
  Reg receiver() const { return s_.receiver; }
  std::uint32_t block_size(BlockId b) const { return s_.block_begin[b + 1] - s_.block_begin[b]; }
  Reg dst(BlockId b, std::uint32_t i) const { return s_.dst[s_.block_begin[b] + i]; }
  template <class Fn>
  void for_each_use(BlockId b, std::uint32_t i, Fn fn) const {
    for (Reg a : s_.operands(s_.block_begin[b] + i)) fn(a);
  }

  bool run_block(BlockId b, Outcome* out, bool* gc_here) {
    for (std::uint32_t i = 0; i < block_size(b); ++i) {
      const InstrId id = s_.block_begin[b] + i;
      cur_block_ = b;
      cur_instr_ = i;
      const std::span<const Reg> uses = s_.operands(id);
      const std::uint8_t kept = kept_[id];
      for (unsigned k = 0; k < uses.size() && k <= FunctionShape::kMaxAccessedOperand; ++k)
        if (((s_.accessed[id] >> k) & 1) && access(b, i, k, s_.site[id], uses[k], (kept >> k) & 1, out)) return true;
      if (s_.returns_value(id)) {
        if (options_.verify_returns && !uses.empty()) {
          std::uint64_t obj = regs_[uses[0]];
          if (obj >= kFirstObject && !marked(obj)) {
            out->violated = true;
            out->violation = Violation{b, i, 0, kNoSite, uses[0], obj, epoch_, {}};
          }
        }
        return true;
      }
      if (s_.may_gc(id)) maybe_gc(gc_here);
      const Reg d = s_.dst[id];
      if (d == kNoReg) continue;
      if (s_.is_copy(id)) {
        regs_[d] = regs_[uses[0]];
      } else if (s_.allocates(id)) {
        regs_[d] = next_object_++;
        if (options_.allocation_marks) mark(regs_[d]);
      } else {
        regs_[d] = random_object();
        if (s_.result_marked(id) && regs_[d] >= kFirstObject) mark(regs_[d]);
      }
    }
    return false;
  }

  const FunctionShape& s_;
};

// Tape without steps (from, to] (blocks of steps `from` and `to` are equal).
Tape cut(const Tape& t, std::size_t from, std::size_t to) {
  Tape r;
  r.entry_draws = t.entry_draws;
  r.draws.assign(t.draws.begin(), t.draws.begin() + t.entry_draws);
  r.draw_is_gc.assign(t.draw_is_gc.begin(), t.draw_is_gc.begin() + t.entry_draws);
  for (std::size_t s = 0; s < t.steps.size(); ++s) {
    if (s > from && s <= to) continue;
    const Step& st = t.steps[s];
    std::uint32_t begin = static_cast<std::uint32_t>(r.draws.size());
    r.draws.insert(r.draws.end(), t.draws.begin() + st.draw_begin, t.draws.begin() + st.draw_end);
    r.draw_is_gc.insert(r.draw_is_gc.end(), t.draw_is_gc.begin() + st.draw_begin, t.draw_is_gc.begin() + st.draw_end);
    r.steps.push_back({st.block, begin, static_cast<std::uint32_t>(r.draws.size())});
  }
  return r;
}

Tape truncate(const Tape& t, std::size_t last_step) {
  Tape r = t;
  r.steps.resize(last_step + 1);
  r.draws.resize(r.steps.back().draw_end);
  r.draw_is_gc.resize(r.steps.back().draw_end);
  return r;
}

// Random runs until the first violation, which is shrunk (cycles cut, GCs turned off while it
// still violates) and replayed for its path.
template <class M, class Code>
CheckReport run_checks(const Code& f, std::size_t num_blocks, const ElimResult& decisions, const CheckOptions& options) {
  CheckReport report;
  if (num_blocks == 0) return report;
  M m(f, decisions, options, &report);
  Rng rng(options.seed);
  Tape tape;
  for (std::uint32_t p = 0; p < options.paths; ++p) {
    ++report.paths;
    Outcome o = m.execute(&tape, false, &rng, nullptr);
    if (!o.violated) continue;
    Tape best = truncate(tape, o.violation_step);
    if (options.minimize) {
      M quiet(f, decisions, options, nullptr);
      auto still_violates = [&](Tape* t) {
        Outcome r = quiet.execute(t, true, nullptr, nullptr);
        if (!r.valid || !r.violated) return false;
        *t = truncate(*t, r.violation_step);
        return true;
      };
      int budget = 2000;
      bool progress = true;
      while (progress && budget > 0) {
        progress = false;
        // Cut the latest cycle first: steps i < j with the same block.
        std::vector<std::size_t> last_seen(num_blocks, SIZE_MAX);
        for (std::size_t j = 0; j < best.steps.size() && budget > 0; ++j) {
          std::size_t i = last_seen[best.steps[j].block];
          last_seen[best.steps[j].block] = j;
          if (i == SIZE_MAX) continue;
          Tape candidate = cut(best, i, j);
          --budget;
          if (still_violates(&candidate)) {
            best = std::move(candidate);
            progress = true;
            break;
          }
        }
      }
      for (std::size_t d = 0; d < best.draws.size() && budget > 0; ++d) {
        if (!best.draw_is_gc[d] || best.draws[d] % 100 >= options.gc_percent) continue;
        Tape candidate = best;
        candidate.draws[d] = kNoGcDraw;
        --budget;
        if (still_violates(&candidate)) best = std::move(candidate);
      }
    }
    std::vector<PathStep> trace;
    M replay(f, decisions, options, nullptr);
    Outcome final_outcome = replay.execute(&best, true, nullptr, &trace);
    if (!final_outcome.violated) final_outcome = o;  // cannot happen; keep the original
    report.violation = final_outcome.violation;
    report.violation->path = std::move(trace);
    break;
  }
  return report;
}

}  // namespace

CheckReport check_function(const Function& f, const ElimResult& decisions, const CheckOptions& options) {
  return run_checks<IrMachine>(f, f.blocks.size(), decisions, options);
}

CheckReport check_shape(const FunctionShape& shape, const ElimResult& decisions, const CheckOptions& options) {
  return run_checks<ShapeMachine>(shape, shape.num_blocks(), decisions, options);
}

std::string format_violation(const Function& f, const Violation& v) {
  const std::string where = v.site == kNoSite ? std::string("return") : fmt::format("site #{}", v.site);
  std::string s = fmt::format("{} (block {}, v{}): object o{} not marked in epoch {}; path:", where,
                              v.block < f.blocks.size() ? f.blocks[v.block].name : "?", v.reg, v.object, v.epoch);
  auto out = std::back_inserter(s);
  for (std::size_t i = 0; i < v.path.size(); ++i) {
    fmt::format_to(out, "{}{}{}", i ? " -> " : " ", f.blocks[v.path[i].block].name, v.path[i].gc ? " [gc]" : "");
  }
  return s;
}

std::string format_violation(const Violation& v) {
  const std::string where = v.site == kNoSite ? std::string("return") : fmt::format("site #{}", v.site);
  std::string s = fmt::format("{} (block {}, r{}): object o{} not marked in epoch {}; path:", where, v.block, v.reg,
                              v.object, v.epoch);
  auto out = std::back_inserter(s);
  for (std::size_t i = 0; i < v.path.size(); ++i)
    fmt::format_to(out, "{}{}{}", i ? " -> " : " ", v.path[i].block, v.path[i].gc ? " [gc]" : "");
  return s;
}

CheckOptions check_options_for(const ElimResult& decisions, std::uint32_t paths, std::uint64_t seed) {
  CheckOptions o;
  o.paths = paths;
  o.seed = seed;
  o.gc_at_safepoints = decisions.safepoints == SafepointMode::kExact || decisions.pass == PassKind::kNone;
  o.allocation_marks = decisions.allocation_marks;
  o.receiver_marked = decisions.receiver_marked;
  o.roots_marked = decisions.roots_marked;
  o.verify_returns = decisions.returns_marked;
  return o;
}

}  // namespace objprof::ir
