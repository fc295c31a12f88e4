// x86_64 lowering of a decoded IR function with asmjit's x86::Compiler. Every IR register is a
// 64-bit virtual register (plus a tag register when its kind is dynamic); asmjit's register
// allocator assigns machine registers. Frame slots (sim::Value, 16 bytes) are the GC roots:
// at every instruction that may GC, registers that may hold references are stored there and
// reloaded afterwards, so a moving collector never leaves a stale address in a machine register.
// The walk and that discipline are the same on arm64 (lower_core.h); here is x86_64's
// instruction selection.
#include "lower_core.h"

#if defined(__x86_64__)

#include "backends/x86_64/x86_barrier.h"

#include <asmjit/x86.h>

#include <cstddef>

namespace objprof::sim::jit {

using namespace objprof::backends;  // the barrier emitters (objprof_emit)
namespace {

using namespace asmjit;
using sim::DecodedInstr;
using ir::Opcode;

// x86_64's asmjit types for the neutral part (lower_core.h).
struct X86 {
  using Compiler = x86::Compiler;
  using Gp = x86::Gp;
  using BarrierRegs = X86BarrierRegs;
};

// x86_64's instruction selection; the walk, the frame discipline and the barriers' placement
// are LowerCore's.
class X86Lower : public LowerCore<X86Lower, X86> {
 public:
  using LowerCore::LowerCore;

 private:
  friend LowerCore;

  x86::Mem slot(ir::Reg r) const { return x86::qword_ptr(R_, static_cast<std::int32_t>(r) * kSlot); }
  x86::Mem tag_slot(ir::Reg r) const { return x86::byte_ptr(R_, static_cast<std::int32_t>(r) * kSlot + kTagOffset); }

  // Register value <-> frame slot.
  void store_value(ir::Reg r) {
    cc_.mov(slot(r), v_[r]);
    if (kind(r) == kDynamic) cc_.mov(tag_slot(r), t_[r].r8());
  }
  void load_value(ir::Reg r) {
    cc_.mov(v_[r], slot(r));
    if (kind(r) == kDynamic) cc_.movzx(t_[r], tag_slot(r));
  }
  void reload_value(ir::Reg r) { cc_.mov(v_[r], slot(r)); }
  void load_tag(ir::Reg r) { cc_.movzx(t_[r], tag_slot(r)); }
  void zero(ir::Reg r) { cc_.xor_(v_[r].r32(), v_[r].r32()); }
  void tag_ref_slot(ir::Reg r) { cc_.mov(tag_slot(r), 1); }
  void load_constant(const x86::Gp& dst, std::uint64_t value) { cc_.mov(dst, imm(value)); }
  x86::Gp new_scratch() { return cc_.newUIntPtr("bs"); }
  InvokeNode* call_runtime(const void* fn, const FuncSignature& signature) {
    InvokeNode* call = nullptr;
    cc_.invoke(&call, imm(reinterpret_cast<std::uint64_t>(fn)), signature);
    return call;
  }
  void jump(Label l) { cc_.jmp(l); }
  void jump_if_nonzero(const x86::Gp& r, Label l) {
    cc_.test(r, r);
    cc_.jnz(l);
  }
  void set_up() {}  // nothing: the barrier has &desc and the bounds as immediates
  void return_failure() {
    x86::Gp one = cc_.newUInt32("one");
    cc_.mov(one, 1);
    cc_.ret(one);
  }

  // The object checks of an access: a reference (tag), not null.
  void check_object(std::uint32_t pc, ir::Reg r) {
    const std::uint8_t k = kind(r);
    if (k == kScalar) {
      cc_.jmp(fail_label(pc));
      return;
    }
    if (k == kDynamic) {
      cc_.test(t_[r], t_[r]);
      cc_.jz(fail_label(pc));
    }
    cc_.test(v_[r], v_[r]);
    cc_.jz(fail_label(pc));
  }
  // A scalar operand (arithmetic, index, length): fails when it holds a reference.
  void check_scalar(std::uint32_t pc, ir::Reg r) {
    const std::uint8_t k = kind(r);
    if (k == kRef) {
      cc_.jmp(fail_label(pc));
    } else if (k == kDynamic) {
      cc_.test(t_[r], t_[r]);
      cc_.jnz(fail_label(pc));
    }
  }
  // A value stored into a slot whose reference-ness is known: reference slots take references
  // or zero, scalar slots take scalars.
  void check_store(std::uint32_t pc, ir::Reg v, bool ref_slot) {
    const std::uint8_t k = kind(v);
    if (ref_slot) {
      if (k == kRef) return;
      Label ok = cc_.newLabel();
      if (k == kDynamic) {
        cc_.test(t_[v], t_[v]);
        cc_.jnz(ok);
      }
      cc_.test(v_[v], v_[v]);
      cc_.jnz(fail_label(pc));
      cc_.bind(ok);
    } else {
      check_scalar(pc, v);
    }
  }

  void lower(std::uint32_t pc, const DecodedInstr& d);
  void lower_binary(std::uint32_t pc, const DecodedInstr& d);
  void lower_array(std::uint32_t pc, const DecodedInstr& d);
};

void X86Lower::lower_binary(std::uint32_t pc, const DecodedInstr& d) {
  check_scalar(pc, d.a);
  check_scalar(pc, d.b);
  const x86::Gp& A = v_[d.a];
  const x86::Gp& B = v_[d.b];
  x86::Gp t = cc_.newInt64("t");
  const auto op = static_cast<ir::BinaryOp>(d.sub);
  switch (op) {
    case ir::BinaryOp::kAdd: cc_.mov(t, A); cc_.add(t, B); break;
    case ir::BinaryOp::kSub: cc_.mov(t, A); cc_.sub(t, B); break;
    case ir::BinaryOp::kMul: cc_.mov(t, A); cc_.imul(t, B); break;
    case ir::BinaryOp::kAnd: cc_.mov(t, A); cc_.and_(t, B); break;
    case ir::BinaryOp::kOr: cc_.mov(t, A); cc_.or_(t, B); break;
    case ir::BinaryOp::kXor: cc_.mov(t, A); cc_.xor_(t, B); break;
    case ir::BinaryOp::kShl:
    case ir::BinaryOp::kShr: {
      x86::Gp cnt = cc_.newInt64("cnt");
      cc_.mov(cnt, B);  // the count register is cl; x86 masks the count to 6 bits like the IR
      cc_.mov(t, A);
      if (op == ir::BinaryOp::kShl) cc_.shl(t, cnt.r8());
      else cc_.sar(t, cnt.r8());
      break;
    }
    case ir::BinaryOp::kDiv:
    case ir::BinaryOp::kRem: {
      cc_.test(B, B);
      cc_.jz(fail_label(pc));
      Label normal = cc_.newLabel(), done = cc_.newLabel();
      cc_.cmp(B, -1);
      cc_.jne(normal);
      // x / -1 wraps (idiv would trap on INT64_MIN); x % -1 is 0.
      if (op == ir::BinaryOp::kDiv) {
        cc_.mov(t, A);
        cc_.neg(t);
      } else {
        cc_.xor_(t, t);
      }
      cc_.jmp(done);
      cc_.bind(normal);
      x86::Gp hi = cc_.newInt64("hi"), lo = cc_.newInt64("lo");
      cc_.mov(lo, A);
      cc_.cqo(hi, lo);
      cc_.idiv(hi, lo, B);
      cc_.mov(t, op == ir::BinaryOp::kDiv ? lo : hi);
      cc_.bind(done);
      break;
    }
  }
  cc_.mov(v_[d.dst], t);
  def_tag(d.dst, kScalar);
}

void X86Lower::lower_array(std::uint32_t pc, const DecodedInstr& d) {
  check_object(pc, d.a);
  const x86::Gp& A = v_[d.a];
  x86::Gp fl = cc_.newUInt64("tflags");
  cc_.mov(fl.r32(), x86::dword_ptr(A));  // header word 0: u32 type id
  cc_.movzx(fl, x86::byte_ptr(flags_, fl));
  cc_.test(fl, kTypeIsArray);
  cc_.jz(fail_label(pc));
  barrier(d.a, d, 0);
  if (d.op == Opcode::kArrayLength) {
    cc_.mov(v_[d.dst], x86::qword_ptr(A, kLengthOffset));
    def_tag(d.dst, kScalar);
    return;
  }
  check_scalar(pc, d.b);
  const x86::Gp& I = v_[d.b];
  cc_.cmp(I, x86::qword_ptr(A, kLengthOffset));
  cc_.jae(fail_label(pc));  // unsigned: negative indices are huge
  const x86::Mem elem = x86::qword_ptr(A, I, 3, kFirstSlot);
  const std::uint8_t ek = k_.elem[d.a];
  if (d.op == Opcode::kArrayGet) {
    // A plain load is an acquire load on x86_64 (Heap::load).
    if (d.dst == d.a || d.dst == d.b) {
      x86::Gp t = cc_.newInt64("elem");
      cc_.mov(t, elem);
      cc_.mov(v_[d.dst], t);
    } else {
      cc_.mov(v_[d.dst], elem);
    }
    if (kind(d.dst) == kDynamic) {
      if (ek == kRef || ek == kScalar) {
        def_tag(d.dst, ek);
      } else {
        cc_.mov(t_[d.dst], fl);
        cc_.shr(t_[d.dst], 1);  // kTypeRefElems
        cc_.and_(t_[d.dst], 1);
      }
    }
    return;
  }
  // aput: the value must match the array's element kind.
  if (ek == kRef || ek == kScalar) {
    check_store(pc, d.c, ek == kRef);
  } else {
    Label scalar_array = cc_.newLabel(), checked = cc_.newLabel();
    cc_.test(fl, kTypeRefElems);
    cc_.jz(scalar_array);
    check_store(pc, d.c, true);
    cc_.jmp(checked);
    cc_.bind(scalar_array);
    check_store(pc, d.c, false);
    cc_.bind(checked);
  }
  cc_.mov(elem, v_[d.c]);  // a plain store is a release store on x86_64 (Heap::store)
}

void X86Lower::lower(std::uint32_t pc, const DecodedInstr& d) {
  switch (d.op) {
    case Opcode::kConst:
      cc_.mov(v_[d.dst], imm(d.imm));
      def_tag(d.dst, kScalar);
      break;
    case Opcode::kNull:
      cc_.xor_(v_[d.dst], v_[d.dst]);
      def_tag(d.dst, kRef);
      break;
    case Opcode::kMove:
      if (d.dst == d.a) break;
      cc_.mov(v_[d.dst], v_[d.a]);
      copy_tag(d.dst, d.a);
      break;
    case Opcode::kBinary: lower_binary(pc, d); break;
    case Opcode::kCompare: {
      x86::Gp t = cc_.newInt64("cmp");
      cc_.xor_(t.r32(), t.r32());
      cc_.cmp(v_[d.a], v_[d.b]);
      x86::CondCode cond = x86::CondCode::kEqual;
      switch (static_cast<ir::CompareOp>(d.sub)) {
        case ir::CompareOp::kLt: cond = x86::CondCode::kSignedLT; break;
        case ir::CompareOp::kLe: cond = x86::CondCode::kSignedLE; break;
        case ir::CompareOp::kGt: cond = x86::CondCode::kSignedGT; break;
        case ir::CompareOp::kGe: cond = x86::CondCode::kSignedGE; break;
        case ir::CompareOp::kEq: cond = x86::CondCode::kEqual; break;
        case ir::CompareOp::kNe: cond = x86::CondCode::kNotEqual; break;
      }
      cc_.set(cond, t.r8());
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
      const x86::Gp& A = v_[d.a];
      cc_.cmp(x86::dword_ptr(A), d.type);
      cc_.jne(fail_label(pc));
      barrier(d.a, d, 0);
      const x86::Mem field = x86::qword_ptr(A, kFirstSlot + 8 * static_cast<std::int32_t>(d.slot));
      if (d.op == Opcode::kGetField) {
        if (d.dst == d.a) {
          x86::Gp t = cc_.newInt64("field");
          cc_.mov(t, field);
          cc_.mov(v_[d.dst], t);
        } else {
          cc_.mov(v_[d.dst], field);
        }
        def_tag(d.dst, d.field_ref ? kRef : kScalar);
      } else {
        check_store(pc, d.b, d.field_ref);
        cc_.mov(field, v_[d.b]);
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
    case Opcode::kRefEqual: {
      barrier(d.a, d, 0);
      barrier(d.b, d, 1);
      x86::Gp t = cc_.newInt64("refeq");
      cc_.xor_(t.r32(), t.r32());
      cc_.cmp(v_[d.a], v_[d.b]);
      cc_.sete(t.r8());
      cc_.mov(v_[d.dst], t);
      def_tag(d.dst, kScalar);
      break;
    }
    case Opcode::kInvoke:
    case Opcode::kCallStatic:
      if (d.op == Opcode::kInvoke) {
        check_object(pc, d.a);
        barrier(d.a, d, 0);
      }
      runtime_call(pc, &sim::rt::call, d.src->may_gc, d.args, d.dst);
      break;
    case Opcode::kSafepoint: {
      // Poll the heap's stop flag inline (a plain byte load is an acquire load on x86_64);
      // only a pending collection spills the references and parks in the runtime.
      Label done = cc_.newLabel();
      x86::Gp flag = cc_.newUIntPtr("stop_flag");
      cc_.mov(flag, imm(reinterpret_cast<std::uint64_t>(&in_.request->heap->stop_flag())));
      cc_.cmp(x86::byte_ptr(flag), 0);
      cc_.je(done);
      park_at_safepoint();
      cc_.bind(done);
      break;
    }
    case Opcode::kGoto:
      if (d.t0 != pc + 1) cc_.jmp(label_at(d.t0));
      break;
    case Opcode::kBranch:
      cc_.test(v_[d.a], v_[d.a]);
      cc_.jnz(label_at(d.t0));
      if (d.t1 != pc + 1) cc_.jmp(label_at(d.t1));
      break;
    case Opcode::kSwitch: {
      // k < n ? targets[k] : targets.back() (unsigned k, like the interpreter).
      for (std::size_t i = 0; i + 1 < d.targets.size(); ++i) {
        cc_.cmp(v_[d.a], imm(static_cast<std::int64_t>(i)));
        cc_.je(label_at(d.targets[i]));
      }
      cc_.jmp(label_at(d.targets.back()));
      break;
    }
    case Opcode::kReturn: {
      if (d.a == ir::kNoReg) {
        cc_.mov(x86::qword_ptr(RET_), 0);
        cc_.mov(x86::byte_ptr(RET_, kTagOffset), 0);
      } else {
        cc_.mov(x86::qword_ptr(RET_), v_[d.a]);
        if (kind(d.a) == kDynamic) cc_.mov(x86::byte_ptr(RET_, kTagOffset), t_[d.a].r8());
        else cc_.mov(x86::byte_ptr(RET_, kTagOffset), kind(d.a) == kRef ? 1 : 0);
      }
      cache_to_thread();
      x86::Gp ok = cc_.newUInt32("ok");
      cc_.xor_(ok, ok);
      cc_.ret(ok);
      break;
    }
  }
}

}  // namespace

Lowered lower_x86_64(const LowerInput& in) { return X86Lower(in).run(); }

}  // namespace objprof::sim::jit

#else

namespace objprof::sim::jit {
Lowered lower_x86_64(const LowerInput&) { return {nullptr, 0, "unsupported on this arch"}; }
}  // namespace objprof::sim::jit

#endif
