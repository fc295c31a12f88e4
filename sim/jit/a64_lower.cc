// arm64 lowering of a decoded IR function with asmjit's a64::Compiler: the same shape as
// x86_64_lower.cc (see there and docs/jit.md for the frame, kinds and GC discipline). What
// differs on arm64:
//  - slot loads and stores are ldar/stlr (the sim heap's acquire/release slots, which on arm64
//    are not plain moves), so a slot address is computed first;
//  - sdiv does not trap: x / 0 is checked explicitly, and INT64_MIN / -1 gives INT64_MIN, which
//    is the interpreter's wrapping -x; the remainder is x - (x / y) * y (msub);
//  - shifts by register (lslv/asrv) use the count modulo 64 like the IR;
//  - runtime functions are called through a register (blr), as they may be far from the code.
// What does not differ (the walk, the frame's GC discipline, barriers, placing the code) is in
// lower_core.h.
#include "lower_core.h"

#if defined(__aarch64__)

#include "backends/arm64/a64_barrier.h"

#include <asmjit/arm.h>
#include <asmjit/arm/a64compiler.h>

#include <cstddef>

namespace objprof::sim::jit {

using namespace objprof::backends;  // the barrier emitters (objprof_emit)
namespace {

using namespace asmjit;
using sim::DecodedInstr;
using ir::Opcode;

// arm64's asmjit types for the neutral part (lower_core.h).
struct A64 {
  using Compiler = a64::Compiler;
  using Gp = a64::Gp;
  using BarrierRegs = A64BarrierRegs;
};

// arm64's instruction selection; the walk, the frame discipline and the barriers' placement
// are LowerCore's.
class A64Lower : public LowerCore<A64Lower, A64> {
 public:
  using LowerCore::LowerCore;

 private:
  friend LowerCore;

  a64::Mem slot(ir::Reg r) const { return arm::ptr(R_, static_cast<std::int32_t>(r) * kSlot); }
  a64::Mem tag_slot(ir::Reg r) const { return arm::ptr(R_, static_cast<std::int32_t>(r) * kSlot + kTagOffset); }
  void mov_imm(const a64::Gp& dst, std::uint64_t value) {
    bool first = true;
    for (std::uint32_t shift = 0; shift < 64; shift += 16) {
      const std::uint64_t half = (value >> shift) & 0xffff;
      if (half == 0) continue;
      if (first) cc_.movz(dst, Imm(half), arm::lsl(shift));
      else cc_.movk(dst, Imm(half), arm::lsl(shift));
      first = false;
    }
    if (first) cc_.movz(dst, Imm(0));
  }
  a64::Gp imm_reg(std::uint64_t value) {
    a64::Gp t = cc_.newUInt64("imm");
    mov_imm(t, value);
    return t;
  }

  void store_value(ir::Reg r) {
    cc_.str(v_[r], slot(r));
    if (kind(r) == kDynamic) cc_.strb(t_[r].w(), tag_slot(r));
  }
  void load_value(ir::Reg r) {
    cc_.ldr(v_[r], slot(r));
    if (kind(r) == kDynamic) cc_.ldrb(t_[r].w(), tag_slot(r));
  }
  void reload_value(ir::Reg r) { cc_.ldr(v_[r], slot(r)); }
  void load_tag(ir::Reg r) { cc_.ldrb(t_[r].w(), tag_slot(r)); }
  void zero(ir::Reg r) { cc_.mov(v_[r], Imm(0)); }
  // One register holds the 1 for every reference slot's tag.
  void tag_ref_slot(ir::Reg r) {
    if (!one_.isValid()) {
      one_ = cc_.newUInt32("one");
      cc_.mov(one_, Imm(1));
    }
    cc_.strb(one_, tag_slot(r));
  }
  void load_constant(const a64::Gp& dst, std::uint64_t value) { mov_imm(dst, value); }
  a64::Gp new_scratch() { return cc_.newUInt64("bs"); }
  void jump(Label l) { cc_.b(l); }
  void jump_if_nonzero(const a64::Gp& r, Label l) { cc_.cbnz(r, l); }
  // &BarrierDescriptor in a register for the whole method: on arm64 a 64-bit immediate takes up
  // to four instructions, so the barrier loads its bounds and bitmap through this register
  // (BoundsSource::kDescriptor, set by the driver) instead of materializing three addresses.
  void set_up() {
    if (!in_.barriers) return;
    desc_ = cc_.newUIntPtr("desc");
    mov_imm(desc_, reinterpret_cast<std::uint64_t>(in_.request->desc));
  }
  void return_failure() {
    a64::Gp failed = cc_.newUInt32("failed");
    cc_.mov(failed, Imm(1));
    cc_.ret(failed);
  }

  // Every runtime call goes through here. asmjit's a64 calling convention (Debian's
  // 0.0~git20221210) lists x30 among the registers a callee preserves, while its allocator hands
  // x30 out like any other register; but `blr` itself writes the return address to x30, so a
  // value the allocator kept in x30 across a call came back as a code address (the "index
  // 365131798232 out of bounds" of generated program seed 1). Marking x30 clobbered by this
  // call makes the allocator spill or move whatever it kept there.
  InvokeNode* call_runtime(const void* fn, const FuncSignature& sig) {
    InvokeNode* call = nullptr;
    cc_.invoke(&call, imm_reg(reinterpret_cast<std::uint64_t>(fn)), sig);
    CallConv& conv = call->detail()._callConv;
    conv.setPreservedRegs(RegGroup::kGp, conv.preservedRegs(RegGroup::kGp) & ~Support::bitMask(a64::Gp::kIdLr));
    return call;
  }

  void check_object(std::uint32_t pc, ir::Reg r) {
    const std::uint8_t k = kind(r);
    if (k == kScalar) {
      cc_.b(fail_label(pc));
      return;
    }
    if (k == kDynamic) cc_.cbz(t_[r], fail_label(pc));
    cc_.cbz(v_[r], fail_label(pc));
  }
  void check_scalar(std::uint32_t pc, ir::Reg r) {
    const std::uint8_t k = kind(r);
    if (k == kRef) cc_.b(fail_label(pc));
    else if (k == kDynamic) cc_.cbnz(t_[r], fail_label(pc));
  }
  void check_store(std::uint32_t pc, ir::Reg v, bool ref_slot) {
    const std::uint8_t k = kind(v);
    if (ref_slot) {
      if (k == kRef) return;
      Label ok = cc_.newLabel();
      if (k == kDynamic) cc_.cbnz(t_[v], ok);
      cc_.cbnz(v_[v], fail_label(pc));
      cc_.bind(ok);
    } else {
      check_scalar(pc, v);
    }
  }

  void lower(std::uint32_t pc, const DecodedInstr& d);
  void lower_binary(std::uint32_t pc, const DecodedInstr& d);
  void lower_array(std::uint32_t pc, const DecodedInstr& d);

  a64::Gp one_;  // see tag_ref_slot
};

void A64Lower::lower_binary(std::uint32_t pc, const DecodedInstr& d) {
  check_scalar(pc, d.a);
  check_scalar(pc, d.b);
  const a64::Gp& A = v_[d.a];
  const a64::Gp& B = v_[d.b];
  a64::Gp t = cc_.newInt64("t");
  switch (static_cast<ir::BinaryOp>(d.sub)) {
    case ir::BinaryOp::kAdd: cc_.add(t, A, B); break;
    case ir::BinaryOp::kSub: cc_.sub(t, A, B); break;
    case ir::BinaryOp::kMul: cc_.mul(t, A, B); break;
    case ir::BinaryOp::kAnd: cc_.and_(t, A, B); break;
    case ir::BinaryOp::kOr: cc_.orr(t, A, B); break;
    case ir::BinaryOp::kXor: cc_.eor(t, A, B); break;
    case ir::BinaryOp::kShl: cc_.lsl(t, A, B); break;
    case ir::BinaryOp::kShr: cc_.asr(t, A, B); break;
    case ir::BinaryOp::kDiv:
      cc_.cbz(B, fail_label(pc));
      cc_.sdiv(t, A, B);
      break;
    case ir::BinaryOp::kRem: {
      cc_.cbz(B, fail_label(pc));
      a64::Gp q = cc_.newInt64("q");
      cc_.sdiv(q, A, B);
      cc_.msub(t, q, B, A);
      break;
    }
  }
  cc_.mov(v_[d.dst], t);
  def_tag(d.dst, kScalar);
}

void A64Lower::lower_array(std::uint32_t pc, const DecodedInstr& d) {
  check_object(pc, d.a);
  const a64::Gp& A = v_[d.a];
  a64::Gp fl = cc_.newUInt64("tflags");
  cc_.ldr(fl.w(), arm::ptr(A));  // header word 0: u32 type id
  cc_.ldrb(fl.w(), arm::ptr(flags_, fl));
  cc_.tbz(fl, Imm(0), fail_label(pc));  // kTypeIsArray
  barrier(d.a, d, 0);
  if (d.op == Opcode::kArrayLength) {
    cc_.ldr(v_[d.dst], arm::ptr(A, kLengthOffset));
    def_tag(d.dst, kScalar);
    return;
  }
  check_scalar(pc, d.b);
  const a64::Gp& I = v_[d.b];
  a64::Gp n = cc_.newUInt64("len");
  cc_.ldr(n, arm::ptr(A, kLengthOffset));
  cc_.cmp(I, n);
  cc_.b_hs(fail_label(pc));  // unsigned: negative indices are huge
  a64::Gp addr = cc_.newUIntPtr("elem");
  cc_.add(addr, A, I, Imm(arm::lsl(3)));
  cc_.add(addr, addr, Imm(kFirstSlot));
  const std::uint8_t ek = k_.elem[d.a];
  if (d.op == Opcode::kArrayGet) {
    cc_.ldar(v_[d.dst], arm::ptr(addr));
    if (kind(d.dst) == kDynamic) {
      if (ek == kRef || ek == kScalar) {
        def_tag(d.dst, ek);
      } else {
        cc_.lsr(t_[d.dst], fl, Imm(1));  // kTypeRefElems
        cc_.and_(t_[d.dst], t_[d.dst], Imm(1));
      }
    }
    return;
  }
  if (ek == kRef || ek == kScalar) {
    check_store(pc, d.c, ek == kRef);
  } else {
    Label scalar_array = cc_.newLabel(), checked = cc_.newLabel();
    cc_.tbz(fl, Imm(1), scalar_array);  // kTypeRefElems
    check_store(pc, d.c, true);
    cc_.b(checked);
    cc_.bind(scalar_array);
    check_store(pc, d.c, false);
    cc_.bind(checked);
  }
  cc_.emit(a64::Inst::kIdStlr, v_[d.c], arm::ptr(addr));  // (a64::Emitter::stlr emits stllr)
}

void A64Lower::lower(std::uint32_t pc, const DecodedInstr& d) {
  switch (d.op) {
    case Opcode::kConst:
      mov_imm(v_[d.dst], static_cast<std::uint64_t>(d.imm));
      def_tag(d.dst, kScalar);
      break;
    case Opcode::kNull:
      cc_.mov(v_[d.dst], Imm(0));
      def_tag(d.dst, kRef);
      break;
    case Opcode::kMove:
      if (d.dst == d.a) break;
      cc_.mov(v_[d.dst], v_[d.a]);
      copy_tag(d.dst, d.a);
      break;
    case Opcode::kBinary: lower_binary(pc, d); break;
    case Opcode::kCompare:
    case Opcode::kRefEqual: {
      if (d.op == Opcode::kRefEqual) {
        barrier(d.a, d, 0);
        barrier(d.b, d, 1);
      }
      arm::CondCode cond = arm::CondCode::kEQ;
      if (d.op == Opcode::kCompare) {
        switch (static_cast<ir::CompareOp>(d.sub)) {
          case ir::CompareOp::kLt: cond = arm::CondCode::kLT; break;
          case ir::CompareOp::kLe: cond = arm::CondCode::kLE; break;
          case ir::CompareOp::kGt: cond = arm::CondCode::kGT; break;
          case ir::CompareOp::kGe: cond = arm::CondCode::kGE; break;
          case ir::CompareOp::kEq: cond = arm::CondCode::kEQ; break;
          case ir::CompareOp::kNe: cond = arm::CondCode::kNE; break;
        }
      }
      a64::Gp t = cc_.newInt64("cmp");
      cc_.cmp(v_[d.a], v_[d.b]);
      cc_.cset(t, Imm(static_cast<std::uint32_t>(cond)));
      cc_.mov(v_[d.dst], t);
      def_tag(d.dst, kScalar);
      break;
    }
    case Opcode::kNew:
    case Opcode::kNewArray: {
      std::vector<ir::Reg> ops;
      if (d.op == Opcode::kNewArray) ops.push_back(d.a);
      runtime_call(pc, &sim::rt::alloc, true, ops, d.dst);
      break;
    }
    case Opcode::kGetField:
    case Opcode::kPutField: {
      check_object(pc, d.a);
      const a64::Gp& A = v_[d.a];
      a64::Gp ty = cc_.newUInt64("type");
      cc_.ldr(ty.w(), arm::ptr(A));
      cc_.cmp(ty, imm_reg(d.type));
      cc_.b_ne(fail_label(pc));
      barrier(d.a, d, 0);
      a64::Gp addr = cc_.newUIntPtr("field");
      cc_.add(addr, A, imm_reg(static_cast<std::uint64_t>(kFirstSlot) + 8 * std::uint64_t{d.slot}));
      if (d.op == Opcode::kGetField) {
        cc_.ldar(v_[d.dst], arm::ptr(addr));
        def_tag(d.dst, d.field_ref ? kRef : kScalar);
      } else {
        check_store(pc, d.b, d.field_ref);
        cc_.emit(a64::Inst::kIdStlr, v_[d.b], arm::ptr(addr));
      }
      break;
    }
    case Opcode::kArrayGet:
    case Opcode::kArrayPut:
    case Opcode::kArrayLength: lower_array(pc, d); break;
    case Opcode::kMonitorEnter:
    case Opcode::kMonitorExit:
      check_object(pc, d.a);
      barrier(d.a, d, 0);
      break;
    case Opcode::kInvoke:
    case Opcode::kCallStatic:
      if (d.op == Opcode::kInvoke) {
        check_object(pc, d.a);
        barrier(d.a, d, 0);
      }
      runtime_call(pc, &sim::rt::call, d.src->may_gc, d.args, d.dst);
      break;
    case Opcode::kSafepoint: {
      // Inline poll: the heap's stop flag (one byte, nonzero while a collector waits for the
      // mutators to park) with acquire, like Heap::safepoint(); only then the runtime call with
      // its spills and reloads. The flag's address is an immediate: the heap outlives the code.
      Label done = cc_.newLabel();
      a64::Gp flag = imm_reg(reinterpret_cast<std::uint64_t>(&in_.request->heap->stop_flag()));
      a64::Gp stop = cc_.newUInt32("stop");
      cc_.ldarb(stop, arm::ptr(flag));
      cc_.cbz(stop, done);
      park_at_safepoint();
      cc_.bind(done);
      break;
    }
    case Opcode::kGoto:
      if (d.t0 != pc + 1) cc_.b(label_at(d.t0));
      break;
    case Opcode::kBranch:
      cc_.cbnz(v_[d.a], label_at(d.t0));
      if (d.t1 != pc + 1) cc_.b(label_at(d.t1));
      break;
    case Opcode::kSwitch: {
      for (std::size_t i = 0; i + 1 < d.targets.size(); ++i) {
        cc_.cmp(v_[d.a], imm_reg(i));
        cc_.b_eq(label_at(d.targets[i]));
      }
      cc_.b(label_at(d.targets.back()));
      break;
    }
    case Opcode::kReturn: {
      a64::Gp tag = cc_.newUInt64("rtag");
      if (d.a == ir::kNoReg) {
        a64::Gp zero = cc_.newUInt64("zero");
        cc_.mov(zero, Imm(0));
        cc_.str(zero, arm::ptr(RET_));
        cc_.mov(tag, Imm(0));
      } else {
        cc_.str(v_[d.a], arm::ptr(RET_));
        if (kind(d.a) == kDynamic) cc_.mov(tag, t_[d.a]);
        else cc_.mov(tag, Imm(kind(d.a) == kRef ? 1 : 0));
      }
      cc_.strb(tag.w(), arm::ptr(RET_, kTagOffset));
      cache_to_thread();
      a64::Gp ok = cc_.newUInt32("ok");
      cc_.mov(ok, Imm(0));
      cc_.ret(ok);
      break;
    }
  }
}

}  // namespace

Lowered lower_arm64(const LowerInput& in) { return A64Lower(in).run(); }

}  // namespace objprof::sim::jit

#else

namespace objprof::sim::jit {
Lowered lower_arm64(const LowerInput&) { return {nullptr, 0, "unsupported on this arch"}; }
}  // namespace objprof::sim::jit

#endif
