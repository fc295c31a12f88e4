// Random function generator. Structured regions are built with bounded nesting depth (so
// recursion stays shallow even for 100k blocks) and a block budget split among children;
// unstructured functions are a chain of blocks with random extra edges.
#include "objprof/ir/generate.h"

#include "splitmix64.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace objprof::ir {
namespace {

// The generator's stream differs from the checker's for the same seed.
class GeneratorRng : public SplitMix64 {
 public:
  explicit GeneratorRng(std::uint64_t seed) : SplitMix64(seed ^ 0x5bd1e9955bd1e995ull) {}
};

class Generator {
 public:
  Generator(std::uint64_t seed, const GenOptions& o) : rng_(seed), o_(o) {
    o_.regs = std::max<std::uint32_t>(o_.regs, 2);
    o_.blocks = std::max<std::uint32_t>(o_.blocks, 1);
    hot_ = std::max<std::uint32_t>(1, o_.regs / 3);
  }

  Function run(std::string name, CfgShape shape) {
    f_.name = std::move(name);
    f_.num_regs = o_.regs;
    for (Reg r = 0; r < std::min<std::uint32_t>(o_.regs, 3); ++r) f_.params.push_back(r);
    if (shape == CfgShape::kUnstructured) {
      unstructured();
    } else {
      BlockId entry = new_block();
      auto [first, last] = region(o_.blocks > 1 ? o_.blocks - 1 : 0, 0);
      set_goto(entry, first);
      set_ret(last);
      if (shape == CfgShape::kMixed) redirect_some();
    }
    return std::move(f_);
  }

 private:
  Reg any_reg() { return rng_.below(o_.regs); }
  // Accesses prefer a few hot registers so that redundancy is common.
  Reg access_reg() { return rng_.percent(70) ? rng_.below(hot_) : any_reg(); }

  Instr make(Opcode op, Reg dst, RegList args) {
    Instr in;
    in.op = op;
    in.dst = dst;
    in.args = std::move(args);
    if (is_access(op)) in.site = next_site_++;
    return in;
  }

  void fill(BlockId b) {
    auto& instrs = f_.blocks[b].instrs;
    std::uint32_t n = rng_.below(o_.max_block_instrs + 1);
    for (std::uint32_t i = 0; i < n; ++i) {
      if (rng_.percent(o_.safepoint_percent)) {
        switch (rng_.below(4)) {
          case 0: instrs.push_back(make(Opcode::kSafepoint, kNoReg, {})); break;
          case 1: {
            Instr in = make(Opcode::kNew, any_reg(), {});
            in.type = "Obj";
            instrs.push_back(std::move(in));
            break;
          }
          case 2: {
            Instr in = make(Opcode::kInvoke, rng_.percent(50) ? any_reg() : kNoReg, {access_reg(), any_reg()});
            in.name = "Obj.m";
            instrs.push_back(std::move(in));
            break;
          }
          default: {
            Instr in = make(Opcode::kCallStatic, rng_.percent(50) ? any_reg() : kNoReg, {any_reg()});
            in.name = "S.f";
            instrs.push_back(std::move(in));
            break;
          }
        }
        continue;
      }
      if (rng_.percent(o_.reassign_percent)) {
        Reg d = any_reg();
        switch (rng_.below(6)) {
          case 0: instrs.push_back(make(Opcode::kMove, d, {any_reg()})); break;
          case 1: {
            Instr in = make(Opcode::kConst, d, {});
            in.imm = static_cast<std::int64_t>(rng_.below(100));
            instrs.push_back(std::move(in));
            break;
          }
          case 2: instrs.push_back(make(Opcode::kNull, d, {})); break;
          case 3: {
            Instr in = make(Opcode::kBinary, d, {any_reg(), any_reg()});
            in.subop = static_cast<std::uint8_t>(rng_.below(10));
            instrs.push_back(std::move(in));
            break;
          }
          default: {
            Instr in = make(Opcode::kGetField, d, {access_reg()});
            in.type = "Obj";
            in.name = rng_.percent(50) ? "f" : "g";
            instrs.push_back(std::move(in));
            break;
          }
        }
        continue;
      }
      Reg a = access_reg();
      switch (rng_.below(9)) {
        case 0:
        case 1: {
          Instr in = make(Opcode::kGetField, any_reg(), {a});
          in.type = "Obj";
          in.name = "n";
          instrs.push_back(std::move(in));
          break;
        }
        case 2: {
          Instr in = make(Opcode::kPutField, kNoReg, {a, any_reg()});
          in.type = "Obj";
          in.name = "f";
          instrs.push_back(std::move(in));
          break;
        }
        case 3: instrs.push_back(make(Opcode::kArrayGet, any_reg(), {a, any_reg()})); break;
        case 4: instrs.push_back(make(Opcode::kArrayPut, kNoReg, {a, any_reg(), any_reg()})); break;
        case 5: instrs.push_back(make(Opcode::kArrayLength, any_reg(), {a})); break;
        case 6: {
          Instr in = make(Opcode::kInvoke, kNoReg, {a});
          in.name = "Obj.get";
          in.may_gc = false;
          instrs.push_back(std::move(in));
          break;
        }
        case 7:
          instrs.push_back(make(rng_.percent(50) ? Opcode::kMonitorEnter : Opcode::kMonitorExit, kNoReg, {a}));
          break;
        default: instrs.push_back(make(Opcode::kRefEqual, any_reg(), {a, access_reg()})); break;
      }
    }
  }

  BlockId new_block() {
    BlockId b = static_cast<BlockId>(f_.blocks.size());
    f_.blocks.push_back(Block{b == 0 ? std::string("entry") : fmt::format("b{}", b), {}});
    fill(b);
    return b;
  }

  void set_term(BlockId b, Instr t) { f_.blocks[b].instrs.push_back(std::move(t)); }
  void set_goto(BlockId b, BlockId to) {
    Instr t = make(Opcode::kGoto, kNoReg, {});
    t.targets = {to};
    set_term(b, std::move(t));
  }
  void set_br(BlockId b, BlockId t1, BlockId t2) {
    Instr t = make(Opcode::kBranch, kNoReg, {any_reg()});
    t.targets = {t1, t2};
    set_term(b, std::move(t));
  }
  void set_ret(BlockId b) { set_term(b, make(Opcode::kReturn, kNoReg, rng_.percent(50) ? RegList{any_reg()} : RegList{})); }

  // Builds a single-entry region of about `budget` blocks; returns (first, last) where `last`
  // has no terminator yet.
  std::pair<BlockId, BlockId> region(std::uint32_t budget, int depth) {
    BlockId first = new_block();
    BlockId last = first;
    if (budget <= 1) return {first, last};
    std::uint32_t left = budget - 1;
    while (left > 0) {
      // One construct per iteration, chained after `last`.
      std::uint32_t piece = depth >= 7 ? 1 : 1 + rng_.below(std::min<std::uint32_t>(left, 1 + left / 2));
      piece = std::min(piece, left);
      left -= piece;
      std::uint32_t kind = piece < 4 ? 0 : 1 + rng_.below(6);
      switch (kind) {
        case 0: {  // plain block
          BlockId b = new_block();
          set_goto(last, b);
          last = b;
          // Spend the rest of the piece as a straight chain.
          for (std::uint32_t i = 1; i < piece; ++i) {
            BlockId c = new_block();
            set_goto(last, c);
            last = c;
          }
          break;
        }
        case 1: {  // diamond: last -> (then | else) -> join
          auto [t0, t1] = region((piece - 1) / 2, depth + 1);
          auto [e0, e1] = region(piece - 1 - (piece - 1) / 2 > 0 ? piece - 1 - (piece - 1) / 2 : 1, depth + 1);
          BlockId join = new_block();
          set_br(last, t0, e0);
          set_goto(t1, join);
          set_goto(e1, join);
          last = join;
          break;
        }
        case 2: {  // if-then with an early return inside sometimes
          auto [t0, t1] = region(piece - 2, depth + 1);
          BlockId join = new_block();
          set_br(last, t0, join);
          if (rng_.percent(30)) {
            BlockId ret = new_block();
            set_br(t1, join, ret);
            set_ret(ret);
          } else {
            set_goto(t1, join);
          }
          last = join;
          break;
        }
        case 3: {  // while loop: last -> header -> body -> header; header -> exit
          BlockId header = new_block();
          set_goto(last, header);
          auto [b0, b1] = region(piece - 2, depth + 1);
          BlockId exit = new_block();
          set_br(header, b0, exit);
          if (rng_.percent(25)) {  // a break out of the loop
            set_br(b1, header, exit);
          } else {
            set_goto(b1, header);
          }
          last = exit;
          break;
        }
        case 4: {  // do-while: body -> latch -> body | exit
          auto [b0, b1] = region(piece - 1, depth + 1);
          set_goto(last, b0);
          BlockId exit = new_block();
          set_br(b1, b0, exit);
          last = exit;
          break;
        }
        case 5: {  // self loop
          BlockId self = new_block();
          set_goto(last, self);
          BlockId exit = new_block();
          set_br(self, self, exit);
          last = exit;
          for (std::uint32_t i = 2; i < piece; ++i) {
            BlockId c = new_block();
            set_goto(last, c);
            last = c;
          }
          break;
        }
        default: {  // switch with 2..4 cases
          std::uint32_t cases = 2 + rng_.below(3);
          std::uint32_t each = std::max<std::uint32_t>(1, (piece - 1) / cases);
          BlockId join = kNoBlock;
          std::vector<std::pair<BlockId, BlockId>> arms;
          for (std::uint32_t c = 0; c < cases; ++c) arms.push_back(region(each, depth + 1));
          join = new_block();
          Instr t = make(Opcode::kSwitch, kNoReg, {any_reg()});
          for (auto& arm : arms) t.targets.push_back(arm.first);
          if (rng_.percent(50)) t.targets.push_back(join);  // default falls to the join
          set_term(last, std::move(t));
          for (auto& arm : arms) set_goto(arm.second, join);
          last = join;
          break;
        }
      }
    }
    return {first, last};
  }

  // kMixed: turn some gotos into branches with a random extra target (unstructured edges,
  // sometimes into loop bodies, making them irreducible).
  void redirect_some() {
    const BlockId n = static_cast<BlockId>(f_.blocks.size());
    if (n < 3) return;
    for (BlockId b = 0; b < n; ++b) {
      Instr& t = f_.blocks[b].instrs.back();
      if (t.op != Opcode::kGoto || !rng_.percent(8)) continue;
      BlockId extra = 1 + rng_.below(n - 1);
      t.op = Opcode::kBranch;
      t.args = {any_reg()};
      t.targets.push_back(extra);
    }
  }

  void unstructured() {
    const BlockId n = std::max<std::uint32_t>(o_.blocks, 2);
    for (BlockId b = 0; b < n; ++b) new_block();
    for (BlockId b = 0; b + 1 < n; ++b) {
      std::uint32_t pick = rng_.below(100);
      BlockId next = b + 1;
      auto near_fwd = [&] { return std::min<BlockId>(n - 1, b + 2 + rng_.below(6)); };
      auto near_back = [&] { return std::max<BlockId>(1, b > 8 ? b - rng_.below(8) : 1 + rng_.below(b + 1)); };
      if (pick < 30) {
        set_goto(b, next);
      } else if (pick < 55) {
        set_br(b, next, near_fwd());
      } else if (pick < 75) {
        set_br(b, next, near_back());  // loop (or self loop when it picks b)
      } else if (pick < 85) {
        set_br(b, next, 1 + rng_.below(n - 1));  // anywhere: irreducible loops
      } else if (pick < 93 && b > 0) {
        // A block that returns: its successor may become unreachable.
        if (rng_.percent(50)) {
          set_ret(b);
        } else {
          set_br(b, next, near_fwd());
        }
      } else {
        Instr t = make(Opcode::kSwitch, kNoReg, {any_reg()});
        t.targets = {next, near_fwd(), near_back()};
        set_term(b, std::move(t));
      }
    }
    set_ret(n - 1);
  }

  GeneratorRng rng_;
  GenOptions o_;
  std::uint32_t hot_ = 1;
  SiteId next_site_ = 0;
  Function f_;
};

}  // namespace

Module gen_types() {
  Module m;
  m.types.push_back(Type{"Obj", {Field{"f", "ref"}, Field{"g", "ref"}, Field{"n", "int"}}});
  return m;
}

Function generate_function(std::uint64_t seed, const GenOptions& options, std::string name) {
  return Generator(seed, options).run(std::move(name), options.shape);
}

Module generate_module(std::uint64_t seed, std::uint32_t count, const GenOptions& options) {
  Module m = gen_types();
  for (std::uint32_t i = 0; i < count; ++i) {
    CfgShape shape = options.shape;
    if (shape == CfgShape::kMixed) shape = static_cast<CfgShape>(i % 3);
    GenOptions o = options;
    o.shape = shape;
    m.functions.push_back(Generator(seed * 1000003ull + i, o).run(fmt::format("gen{}", i), shape));
  }
  return m;
}

}  // namespace objprof::ir
