// Lua 5.4 bytecode through objprof's front door (objprof_lua_elim.h says what is assumed).
#include "objprof_lua_elim.h"

#include "lobject.h"
#include "lopcodes.h"

#include <objprof/ir/checker.h>

#include <fmt/core.h>

#include <cstdio>

#include <algorithm>
#include <initializer_list>

namespace objprof_lua {

using objprof::ir::BlockId;
using objprof::ir::FunctionShape;
using objprof::ir::FunctionShapeBuilder;
using objprof::ir::kNoReg;
using objprof::ir::Reg;

namespace {

// The barrier-free variant of a rewritable access opcode, or -1.
int barrier_free(OpCode op) {
  switch (op) {
    case OP_GETTABUP: return OP_GETTABUP_NB;
    case OP_SETTABUP: return OP_SETTABUP_NB;
    case OP_GETTABLE: return OP_GETTABLE_NB;
    case OP_GETI: return OP_GETI_NB;
    case OP_GETFIELD: return OP_GETFIELD_NB;
    case OP_SETTABLE: return OP_SETTABLE_NB;
    case OP_SETI: return OP_SETI_NB;
    case OP_SETFIELD: return OP_SETFIELD_NB;
    case OP_SELF: return OP_SELF_NB;
    case OP_SETLIST: return OP_SETLIST_NB;
    default: return -1;
  }
}

// Where control goes after the instruction at pc (at most two places; -1 for none).
struct Next { int a = -1, b = -1; };
Next next_of(const Proto* p, int pc) {
  const Instruction i = p->code[pc];
  switch (luaP_stdop(GET_OPCODE(i))) {
    case OP_JMP: return {pc + 1 + GETARG_sJ(i)};
    case OP_EQ: case OP_LT: case OP_LE: case OP_EQK: case OP_EQI: case OP_LTI: case OP_LEI:
    case OP_GTI: case OP_GEI: case OP_TEST: case OP_TESTSET:
      return {pc + 1, pc + 2};  // the next instruction is the jump the test may skip
    case OP_LFALSESKIP: return {pc + 2};
    case OP_FORPREP: return {pc + 1, pc + 2 + GETARG_Bx(i)};  // enter, or skip the loop
    case OP_FORLOOP: case OP_TFORLOOP: return {pc + 1, pc + 1 - GETARG_Bx(i)};
    case OP_TFORPREP: return {pc + 1 + GETARG_Bx(i)};  // to its OP_TFORCALL
    case OP_RETURN: case OP_RETURN0: case OP_RETURN1: return {};
    default: return {pc + 1};  // OP_TAILCALL of a C function goes on to its OP_RETURN
  }
}

// One prototype's instructions as shape instructions. Every register an instruction may
// write is a definition (a fresh value: sound whatever the register held); an instruction
// that writes several gets one extra definition per further register. The closure's upvalues
// are registers too, after the frame's (upvalue(k)): OP_GETTABUP and OP_SETTABUP access them,
// OP_SETUPVAL defines them, nothing else changes them without a mark (objprof_lua_elim.h).
class Describer {
 public:
  Describer(const Proto* p, FunctionShapeBuilder& b)
      : p_(p), b_(b), regs_(frame_size(p)) {}

  static Reg frame_size(const Proto* p) { return static_cast<Reg>(std::max<int>(p->maxstacksize, 1)); }
  static Reg num_regs(const Proto* p) { return frame_size(p) + static_cast<Reg>(std::max(p->sizeupvalues, 0)); }

  void instruction(int pc) {
    const Instruction i = p_->code[pc];
    const OpCode op = luaP_stdop(GET_OPCODE(i));
    const Reg a = static_cast<Reg>(GETARG_A(i));
    // May run Lua code or the collector: metamethods, calls, allocation, stack growth, __close.
    // Only the exact model (statistics) reads it; root marks make it harmless.
    constexpr std::uint8_t kRuns = FunctionShape::kMayGc;
    switch (op) {
      case OP_MOVE: plain(a, {reg(GETARG_B(i))}); break;
      case OP_LOADI: case OP_LOADF: case OP_LOADK: case OP_LOADKX: case OP_LOADFALSE:
      case OP_LFALSESKIP: case OP_LOADTRUE: case OP_GETUPVAL:
        plain(a, {});
        break;
      case OP_LOADNIL: define_range(a, a + static_cast<Reg>(GETARG_B(i)) + 1); break;
      case OP_SETUPVAL: plain(upvalue(GETARG_B(i)), {a}); break;
      case OP_GETTABUP: access(pc, a, {upvalue(GETARG_B(i))}, kRuns); break;
      case OP_SETTABUP: {
        std::vector<Reg> u{upvalue(a)};
        if (!GETARG_k(i)) u.push_back(reg(GETARG_C(i)));
        access(pc, kNoReg, u, kRuns);
        break;
      }
      case OP_GETTABLE: access(pc, a, {reg(GETARG_B(i)), reg(GETARG_C(i))}, kRuns); break;
      case OP_GETI: case OP_GETFIELD: access(pc, a, {reg(GETARG_B(i))}, kRuns); break;
      case OP_SETTABLE: {
        std::vector<Reg> u{a, reg(GETARG_B(i))};
        if (!GETARG_k(i)) u.push_back(reg(GETARG_C(i)));
        access(pc, kNoReg, u, kRuns);
        break;
      }
      case OP_SETI: case OP_SETFIELD: {
        std::vector<Reg> u{a};
        if (!GETARG_k(i)) u.push_back(reg(GETARG_C(i)));
        access(pc, kNoReg, u, kRuns);
        break;
      }
      case OP_SELF: {  // R[A+1] := R[B]; R[A] := R[B][RK(C)]
        std::vector<Reg> u{reg(GETARG_B(i))};
        if (!GETARG_k(i)) u.push_back(reg(GETARG_C(i)));
        access(pc, a, u, kRuns);
        define_range(a + 1, a + 2);
        break;
      }
      case OP_NEWTABLE:  // the allocator marked the table (and a GC in checkGC root-marks it)
        b_.add_instr(a, {}, 0, kRuns | FunctionShape::kAllocates);
        break;
      case OP_ADDI: case OP_ADDK: case OP_SUBK: case OP_MULK: case OP_MODK: case OP_POWK: case OP_DIVK:
      case OP_IDIVK: case OP_BANDK: case OP_BORK: case OP_BXORK: case OP_SHRI: case OP_SHLI: case OP_NOT:
        plain(a, {reg(GETARG_B(i))});  // no metamethod here: a failing operation goes on to OP_MMBIN*
        break;
      case OP_ADD: case OP_SUB: case OP_MUL: case OP_MOD: case OP_POW: case OP_DIV: case OP_IDIV:
      case OP_BAND: case OP_BOR: case OP_BXOR: case OP_SHL: case OP_SHR:
        plain(a, {reg(GETARG_B(i)), reg(GETARG_C(i))});
        break;
      case OP_MMBIN: case OP_MMBINI: case OP_MMBINK: {
        // The metamethod's result goes to the previous (arithmetic) instruction's A.
        const Reg result = pc > 0 ? static_cast<Reg>(GETARG_A(p_->code[pc - 1])) : a;
        std::vector<Reg> u{a};
        if (op == OP_MMBIN) u.push_back(reg(GETARG_B(i)));
        b_.add_instr(reg(result), u, 0, kRuns);
        break;
      }
      case OP_UNM: case OP_BNOT: b_.add_instr(a, {reg(GETARG_B(i))}, 0, kRuns); break;
      case OP_LEN:  // luaV_objlen keeps its barrier (never rewritten) but covers later accesses
        access(pc, a, {reg(GETARG_B(i))}, kRuns);
        break;
      case OP_CONCAT: {  // works in place and calls __concat above its operands
        b_.add_instr(kNoReg, range(a, a + static_cast<Reg>(GETARG_B(i))), 0, kRuns);
        define_range(a, regs_);
        break;
      }
      case OP_CLOSE: case OP_TFORPREP: b_.add_instr(kNoReg, {}, 0, kRuns); break;
      case OP_TBC: case OP_JMP: case OP_EXTRAARG: plain(kNoReg, {}); break;
      case OP_EQ: case OP_LT: case OP_LE: b_.add_instr(kNoReg, {a, reg(GETARG_B(i))}, 0, kRuns); break;
      case OP_EQK: case OP_EQI: case OP_TEST: plain(kNoReg, {a}); break;
      case OP_LTI: case OP_LEI: case OP_GTI: case OP_GEI: b_.add_instr(kNoReg, {a}, 0, kRuns); break;
      case OP_TESTSET: plain(a, {reg(GETARG_B(i))}); break;
      case OP_CALL: case OP_TAILCALL: {  // the callee's frame starts at A: everything above changes
        const int nargs = GETARG_B(i);
        b_.add_instr(kNoReg, range(a, nargs == 0 ? regs_ : a + static_cast<Reg>(nargs)), 0, kRuns);
        define_range(a, regs_);
        break;
      }
      case OP_RETURN: {
        const int n = GETARG_B(i);
        b_.add_instr(kNoReg, range(a, n == 0 ? regs_ : a + static_cast<Reg>(n) - 1), 0, kRuns);
        break;
      }
      case OP_RETURN0: plain(kNoReg, {}); break;
      case OP_RETURN1: plain(kNoReg, {a}); break;
      case OP_FORPREP: case OP_FORLOOP:
        plain(kNoReg, range(a, a + 3));
        define_range(a, a + 4);
        break;
      case OP_TFORCALL:  // R[A+4], ... := R[A](R[A+1], R[A+2]), called at A+4
        b_.add_instr(kNoReg, range(a, a + 3), 0, kRuns);
        define_range(a + 4, regs_);
        break;
      case OP_TFORLOOP: define_range(a, a + 5); break;
      case OP_SETLIST: {  // R[A][C+i] := R[A+i]; may grow the array (an allocation)
        const int n = GETARG_B(i);
        access(pc, kNoReg, range(a, n == 0 ? regs_ : a + static_cast<Reg>(n) + 1), kRuns);
        break;
      }
      case OP_CLOSURE: b_.add_instr(a, {}, 0, kRuns); break;
      case OP_VARARG: {
        const int n = GETARG_C(i) - 1;
        b_.add_instr(kNoReg, {}, 0, kRuns);
        define_range(a, n < 0 ? regs_ : a + static_cast<Reg>(n));
        break;
      }
      case OP_VARARGPREP: b_.add_instr(kNoReg, {}, 0, kRuns); break;  // moves the frame, values stay
      default:  // an opcode this describer does not know: it writes anything and runs anything
        b_.add_instr(kNoReg, {}, 0, kRuns);
        define_range(0, num_regs(p_));
        break;
    }
  }

 private:
  // A register past the frame (a malformed chunk) fails the shape's verification, and the
  // prototype keeps all its barriers.
  static Reg reg(int r) { return static_cast<Reg>(r); }
  // Upvalue k's register; past the closure's upvalues (a malformed chunk), past every register.
  Reg upvalue(int k) const {
    return k < p_->sizeupvalues ? regs_ + static_cast<Reg>(k) : num_regs(p_) + static_cast<Reg>(k);
  }
  std::vector<Reg> range(Reg from, Reg to) const {
    std::vector<Reg> out;
    for (Reg r = from; r < std::min(to, regs_); ++r) out.push_back(r);
    return out;
  }
  std::vector<Reg> rk(Instruction i) const {
    if (GETARG_k(i)) return {};
    return {reg(GETARG_C(i))};
  }
  void plain(Reg dst, std::initializer_list<Reg> uses) { b_.add_instr(dst, uses, 0, 0); }
  void plain(Reg dst, const std::vector<Reg>& uses) { b_.add_instr(dst, uses, 0, 0); }
  void access(int pc, Reg dst, std::vector<Reg> uses, std::uint8_t flags) {
    b_.add_instr(dst, uses, 0b1, flags, static_cast<objprof::ir::SiteId>(pc));
  }
  void access(int pc, Reg dst, std::initializer_list<Reg> uses, std::uint8_t flags) {
    access(pc, dst, std::vector<Reg>(uses), flags);
  }
  // Frame registers [from, to) (clamped to the frame), or every register for the default case.
  void define_range(Reg from, Reg to) {
    for (Reg r = from; r < std::min(to, num_regs(p_)); ++r) b_.add_instr(r, {}, 0, 0);
  }

  const Proto* p_;
  FunctionShapeBuilder& b_;
  Reg regs_;
};

}  // namespace

objprof::Result<FunctionShape> describe_proto(const Proto* p) {
  const int n = p->sizecode;
  if (n <= 0) return objprof::make_error(objprof::ErrorCode::kInvalidArgument, "a prototype without code");
  // Lua does not verify undumped code: an opcode past the table is a malformed chunk.
  for (int pc = 0; pc < n; ++pc)
    if (GET_OPCODE(p->code[pc]) >= NUM_OPCODES)
      return objprof::make_error(objprof::ErrorCode::kInvalidArgument, fmt::format("instruction {} has no opcode", pc));
  // Leaders: the first instruction, every jump target, and whatever follows a branch.
  std::vector<std::uint8_t> leader(static_cast<std::size_t>(n) + 1, 0);
  leader[0] = 1;
  for (int pc = 0; pc < n; ++pc) {
    const Next next = next_of(p, pc);
    for (const int t : {next.a, next.b}) {
      if (t == -1) continue;
      if (t < 0 || t >= n)
        return objprof::make_error(objprof::ErrorCode::kInvalidArgument,
                                   fmt::format("instruction {} continues at {}, outside the code", pc, t));
      if (t != pc + 1 || next.b != -1) leader[static_cast<std::size_t>(t)] = 1;
    }
    if (next.a != pc + 1 || next.b != -1) leader[static_cast<std::size_t>(pc) + 1] = 1;
  }
  // Block 0 is an empty entry (Lua's first instruction may be a loop header); block k + 1
  // starts at the k-th leader.
  std::vector<BlockId> block_at(static_cast<std::size_t>(n), 0);
  BlockId blocks = 1;
  for (int pc = 0; pc < n; ++pc) {
    if (leader[static_cast<std::size_t>(pc)]) ++blocks;
    block_at[static_cast<std::size_t>(pc)] = blocks - 1;
  }
  FunctionShapeBuilder b(Describer::num_regs(p));
  Describer d(p, b);
  b.begin_block();
  b.add_successor(1);
  for (int pc = 0; pc < n; ++pc) {
    if (leader[static_cast<std::size_t>(pc)]) b.begin_block();
    d.instruction(pc);
    if (pc + 1 == n || leader[static_cast<std::size_t>(pc) + 1]) {
      const Next next = next_of(p, pc);
      for (const int t : {next.a, next.b})
        if (t != -1) b.add_successor(block_at[static_cast<std::size_t>(t)]);
    }
  }
  return std::move(b).finish();
}

void ProtoEliminator::run(Proto* p) {
  run_one(p);
  for (int k = 0; k < p->sizep; ++k) run(p->p[k]);
}

void ProtoEliminator::run_one(Proto* p) {
  ++stats_.protos;
  stats_.instructions += static_cast<std::uint64_t>(p->sizecode);
  auto shape = describe_proto(p);
  if (!shape.ok()) {  // keep every barrier: always sound
    ++stats_.failed;
    return;
  }
  objprof::ir::ElimOptions options;
  options.allocation_marks = true;
  options.roots_marked = true;
  analyses_.reset(*shape);
  objprof::ir::GlobalElimPass(options).run(analyses_, &result_);
  if (check_paths_ != 0) {
    // The pass against the model it assumed: GCs at any instruction that may run code, each
    // marking the registers live across it; new tables marked.
    objprof::ir::CheckOptions co = objprof::ir::check_options_for(result_, check_paths_, stats_.protos);
    const objprof::ir::CheckReport report = objprof::ir::check_shape(*shape, result_, co);
    ++stats_.checked;
    stats_.check_accesses += report.accesses;
    if (!report.ok()) {
      if (++stats_.check_violations <= 5)
        std::fprintf(stderr, "objprof-lua-check: static check of the function at %s:%d: %s\n",
                     p->source ? getstr(p->source) : "?", p->linedefined,
                     objprof::ir::format_violation(*report.violation).c_str());
    }
  }
  for (const objprof::ir::AccessDecision& d : result_.accesses) {
    Instruction& i = p->code[d.site];
    const int nb = barrier_free(luaP_stdop(GET_OPCODE(i)));
    if (nb < 0) continue;  // OP_LEN keeps its barrier
    ++stats_.sites;
    if (d.kept) continue;
    SET_OPCODE(i, nb);
    ++stats_.rewritten;
  }
  if (also_exact_) {
    // The same analyses (CFG, dominators, SSA do not depend on the pass's options).
    objprof::ir::ElimOptions exact;
    objprof::ir::GlobalElimPass(exact).run(analyses_, &result_);
    for (const objprof::ir::AccessDecision& d : result_.accesses)
      if (!d.kept && barrier_free(luaP_stdop(GET_OPCODE(p->code[d.site]))) >= 0) ++stats_.removed_exact;
  }
}

}  // namespace objprof_lua
