// The soundness checker. Each run is recorded as a tape: the blocks visited and the random
// draws each block consumed (object identities, GC or not). A run can be replayed exactly from
// its tape, which is what the shrinker uses: it cuts cycles out of the block sequence and turns
// GCs off while the replay still violates, then reports the shortest tape it found.
#include "objprof/ir/checker.h"

#include "objprof/ir/analysis.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

namespace objprof::ir {
namespace {

constexpr std::uint64_t kNull = 0;
constexpr std::uint64_t kScalar = 1;
constexpr std::uint64_t kFirstObject = 2;
constexpr std::uint64_t kNoGcDraw = 99;  // a GC draw that never collects (for gc_percent < 100)

// splitmix64: small, fast, identical on every platform.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : s_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

 private:
  std::uint64_t s_;
};

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

class Machine {
 public:
  Machine(const Function& f, const ElimResult& decisions, const CheckOptions& options, CheckReport* report)
      : f_(f), cfg_(CfgAnalysis::run(f)), options_(options), report_(report) {
    instr_base_.resize(f.blocks.size() + 1);
    std::uint32_t k = 0;
    for (BlockId b = 0; b < f.blocks.size(); ++b) {
      instr_base_[b] = k;
      k += static_cast<std::uint32_t>(f.blocks[b].instrs.size());
    }
    instr_base_[f.blocks.size()] = k;
    kept_.assign(k, 0);
    for (const AccessDecision& d : decisions.accesses) {
      if (d.block < f.blocks.size() && d.kept) kept_[instr_base_[d.block] + d.instr] |= static_cast<std::uint8_t>(1u << d.operand);
    }
    regs_.resize(f.num_regs);
    if (options.roots_marked) compute_liveness();
    max_steps_ = options.max_steps != 0 ? options.max_steps
                                        : static_cast<std::uint32_t>(std::min<std::size_t>(4 * f.blocks.size() + 16, 100000));
    externals_ = std::max<std::uint32_t>(1, options.external_objects);
  }

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
    for (Reg r = 0; r < f_.num_regs; ++r) {
      std::uint64_t x = draw(false);
      std::uint64_t pct = x % 100;
      regs_[r] = pct < 85 ? kFirstObject + (x >> 8) % externals_ : pct < 95 ? kScalar : kNull;
    }
    if (options_.receiver_marked && f_.has_receiver && !f_.params.empty()) {
      // A receiver is never null, and the caller's invoke marked it in this epoch.
      Reg self = f_.params[0];
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
      bool stop = run_block(b, &out, &gc_here);
      if (!forced) tape->steps.back().draw_end = static_cast<std::uint32_t>(tape->draws.size());
      if (trace != nullptr) trace->push_back({b, gc_here});
      if (out.violated) {
        out.violation_step = step;
        return out;
      }
      if (stop) break;
      if (!forced) {
        const auto& succs = cfg_.succs[b];
        if (succs.empty() || step + 1 >= max_steps_) break;
        b = succs[rng_->next() % succs.size()];
      }
    }
    return out;
  }

 private:
  bool is_succ(BlockId from, BlockId to) const {
    const auto& s = cfg_.succs[from];
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

  // Backward liveness over the CFG the runs follow, per block (live out), independent of the
  // pass's own analyses: a register is live after an instruction if some path from there reads
  // it before writing it.
  void compute_liveness() {
    const std::size_t n = f_.blocks.size();
    words_ = (f_.num_regs + 63) / 64;
    live_out_.assign(n * words_, 0);
    std::vector<std::uint64_t> live_in(n * words_, 0), cur(words_);
    for (bool changed = true; changed;) {
      changed = false;
      for (std::size_t bi = n; bi-- > 0;) {
        const auto b = static_cast<BlockId>(bi);
        std::uint64_t* out = &live_out_[b * words_];
        for (BlockId s : cfg_.succs[b])
          for (std::size_t w = 0; w < words_; ++w) out[w] |= live_in[s * words_ + w];
        std::copy(out, out + words_, cur.begin());
        const auto& instrs = f_.blocks[b].instrs;
        for (std::size_t i = instrs.size(); i-- > 0;) step_back(instrs[i], cur.data());
        for (std::size_t w = 0; w < words_; ++w) {
          if (cur[w] != live_in[b * words_ + w]) changed = true;
          live_in[b * words_ + w] = cur[w];
        }
      }
    }
  }
  static void set_bit(std::uint64_t* bits, Reg r) { bits[r / 64] |= 1ull << (r % 64); }
  static void clear_bit(std::uint64_t* bits, Reg r) { bits[r / 64] &= ~(1ull << (r % 64)); }
  // live before `in` from live after it.
  static void step_back(const Instr& in, std::uint64_t* live) {
    if (in.dst != kNoReg) clear_bit(live, in.dst);
    for (Reg a : in.args) set_bit(live, a);
  }

  // The GC at the current instruction (cur_block_, cur_instr_; a callee's GC counts at the call)
  // marks what the frame's live registers hold.
  void mark_live_roots() {
    const auto& instrs = f_.blocks[cur_block_].instrs;
    roots_.assign(live_out_.begin() + cur_block_ * words_, live_out_.begin() + (cur_block_ + 1) * words_);
    for (std::size_t i = instrs.size(); i-- > cur_instr_ + 1;) step_back(instrs[i], roots_.data());
    if (instrs[cur_instr_].dst != kNoReg) clear_bit(roots_.data(), instrs[cur_instr_].dst);
    for (Reg r = 0; r < f_.num_regs; ++r)
      if (((roots_[r / 64] >> (r % 64)) & 1) && regs_[r] >= kFirstObject) mark(regs_[r]);
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
      for (unsigned k = 0; k < na; ++k) {
        std::uint64_t obj = regs_[in.args[k]];
        if (obj < kFirstObject) continue;  // null or scalar: outside the heap, nothing to mark
        if ((kept >> k) & 1) {
          if (report_ != nullptr) ++report_->barriers;
          if (obj != cache_) {
            cache_ = obj;
            mark(obj);
          }
        }
        if (report_ != nullptr) ++report_->accesses;
        if (!marked(obj)) {
          out->violated = true;
          out->violation = Violation{b, i, k, in.site, in.args[k], obj, epoch_, {}};
          return true;
        }
      }
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
  const CheckOptions& options_;
  CheckReport* report_;
  std::vector<std::uint32_t> instr_base_;
  std::vector<std::uint8_t> kept_;
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

}  // namespace

CheckReport check_function(const Function& f, const ElimResult& decisions, const CheckOptions& options) {
  CheckReport report;
  if (f.blocks.empty()) return report;
  Machine m(f, decisions, options, &report);
  Rng rng(options.seed);
  Tape tape;
  for (std::uint32_t p = 0; p < options.paths; ++p) {
    ++report.paths;
    Outcome o = m.execute(&tape, false, &rng, nullptr);
    if (!o.violated) continue;
    Tape best = truncate(tape, o.violation_step);
    if (options.minimize) {
      Machine quiet(f, decisions, options, nullptr);
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
        std::vector<std::size_t> last_seen(f.blocks.size(), SIZE_MAX);
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
    Machine replay(f, decisions, options, nullptr);
    Outcome final_outcome = replay.execute(&best, true, nullptr, &trace);
    if (!final_outcome.violated) final_outcome = o;  // cannot happen; keep the original
    report.violation = final_outcome.violation;
    report.violation->path = std::move(trace);
    break;
  }
  return report;
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
