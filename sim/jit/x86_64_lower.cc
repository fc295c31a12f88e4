// x86_64 lowering of a decoded IR function with asmjit's x86::Compiler. Every IR register is a
// 64-bit virtual register (plus a tag register when its kind is dynamic); asmjit's register
// allocator assigns machine registers. Frame slots (sim::Value, 16 bytes) are the GC roots:
// at every instruction that may GC, registers that may hold references are stored there and
// reloaded afterwards, so a moving collector never leaves a stale address in a machine register.
#include "lower.h"

#if defined(__x86_64__)

#include "backends/x86_64/x86_barrier.h"

#include <asmjit/x86.h>

#include <fmt/core.h>

#include <cstddef>

namespace objprof::sim::jit {

using namespace objprof::backends;  // the barrier emitters (objprof_emit)
namespace {

using namespace asmjit;
using sim::DecodedInstr;
using ir::Opcode;

constexpr std::int32_t kSlot = sizeof(sim::Value);
constexpr std::int32_t kTagOffset = offsetof(sim::Value, ref);
constexpr std::int32_t kFirstSlot = 16;  // sim::kHeaderBytes
constexpr std::int32_t kLengthOffset = 8;

class ErrorCatcher final : public ErrorHandler {
 public:
  void handleError(asmjit::Error err, const char* message, BaseEmitter*) override {
    if (first == kErrorOk) {
      first = err;
      text = message;
    }
  }
  asmjit::Error first = kErrorOk;
  std::string text;
};

using RtCall = std::uint32_t (*)(void*, std::uint32_t, std::uint32_t, sim::Value*) noexcept;

class X86Lower {
 public:
  explicit X86Lower(const LowerInput& in)
      : in_(in),
        f_(*in.request->functions[in.fn].ir),
        code_(*in.request->functions[in.fn].code),
        pinned_(in.barriers && in.barrier.cache == CacheLocation::kPinnedRegister && function_uses_cache(code_)),
        k_((*in.kinds)[in.fn]) {}

  Lowered run();

 private:
  // Kind of an IR register as the lowering uses it (never-defined registers are scalars).
  std::uint8_t kind(ir::Reg r) const { return k_.reg[r] == kNoKind ? std::uint8_t{kScalar} : k_.reg[r]; }
  x86::Mem slot(ir::Reg r) const { return x86::qword_ptr(R_, static_cast<std::int32_t>(r) * kSlot); }
  x86::Mem tag_slot(ir::Reg r) const { return x86::byte_ptr(R_, static_cast<std::int32_t>(r) * kSlot + kTagOffset); }
  Label label_at(std::uint32_t pc) {
    if (!labels_[pc].isValid()) labels_[pc] = cc_.newLabel();
    return labels_[pc];
  }
  Label fail_label(std::uint32_t pc) {
    if (!fail_[pc].isValid()) fail_[pc] = cc_.newLabel();
    return fail_[pc];
  }

  // Register value <-> frame slot.
  void store_value(ir::Reg r) {
    cc_.mov(slot(r), v_[r]);
    if (kind(r) == kDynamic) cc_.mov(tag_slot(r), t_[r].r8());
  }
  void load_value(ir::Reg r) {
    cc_.mov(v_[r], slot(r));
    if (kind(r) == kDynamic) cc_.movzx(t_[r], tag_slot(r));
  }
  void spill_refs() {
    for (ir::Reg r = 0; r < f_.num_regs; ++r)
      if (kind(r) & kRef) store_value(r);
  }
  void reload_refs() {
    for (ir::Reg r = 0; r < f_.num_regs; ++r)
      if (kind(r) & kRef) cc_.mov(v_[r], slot(r));  // tags do not change in a GC
  }
  // Defines `dst`'s tag after an instruction produced a value of static kind `produced`.
  void def_tag(ir::Reg dst, std::uint8_t produced) {
    if (kind(dst) != kDynamic) return;
    cc_.mov(t_[dst], produced == kRef ? 1 : 0);
  }
  // Tag of `r` into the tag of `dst` (a move).
  void copy_tag(ir::Reg dst, ir::Reg r) {
    if (kind(dst) != kDynamic) return;
    if (kind(r) == kDynamic) cc_.mov(t_[dst], t_[r]);
    else def_tag(dst, kind(r));
  }

  // A runtime call at `pc`: operands to their slots, references too when it may GC.
  void runtime_call(std::uint32_t pc, RtCall fn, bool may_gc, const std::vector<ir::Reg>& operands, ir::Reg dst) {
    for (ir::Reg r : operands)
      if (!(may_gc && (kind(r) & kRef))) store_value(r);
    if (may_gc) spill_refs();
    cache_to_thread();
    InvokeNode* call = nullptr;
    cc_.invoke(&call, imm(reinterpret_cast<std::uint64_t>(fn)),
               FuncSignatureT<std::uint32_t, void*, std::uint32_t, std::uint32_t, sim::Value*>(CallConvId::kHost));
    x86::Gp status = cc_.newUInt32("status");
    call->setArg(0, T_);
    call->setArg(1, imm(in_.fn));
    call->setArg(2, imm(pc));
    call->setArg(3, R_);
    call->setRet(0, status);
    cc_.test(status, status);
    cc_.jnz(exit_error_);
    cache_from_thread();
    if (may_gc) reload_refs();
    if (dst != ir::kNoReg && !(may_gc && (kind(dst) & kRef))) load_value(dst);
    else if (dst != ir::kNoReg && kind(dst) == kDynamic) cc_.movzx(t_[dst], tag_slot(dst));
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

  // The barrier, inline (backends/x86_64/x86_barrier.h) with virtual registers: the allocator
  // picks its scratch registers around the IR's.
  void barrier(ir::Reg r, const DecodedInstr& d, unsigned operand) {
    if (!(d.kept >> operand & 1) || !in_.barriers) return;
    const EmitterConfig cfg = site_config(in_.barrier, d.cache_use[operand]);
    X86BarrierRegs regs;
    regs.obj = v_[r];
    regs.thread = TS_;
    if (pinned()) regs.cache = cache_;
    for (auto& g : regs.scratch) g = cc_.newUIntPtr("bs");
    marks_.around(cc_, pc_, [&] {
      if (Status s = emit_access_barrier(cc_, cfg, *in_.request->desc, regs); !s && barrier_error_.empty())
        barrier_error_ = s.error().message;
    });
  }
  bool pinned() const { return pinned_; }
  // A pinned cache lives in a register inside the method; callees, the interpreter and the
  // collector (which resets it at gc_end) use the ThreadState field, so write it back before
  // every call and reload it after.
  void cache_to_thread() {
    if (!pinned()) return;
    X86BarrierRegs regs;
    regs.thread = TS_;
    regs.cache = cache_;
    if (Status s = emit_store_pinned_cache(cc_, in_.barrier, regs); !s && barrier_error_.empty()) barrier_error_ = s.error().message;
  }
  void cache_from_thread() {
    if (!pinned()) return;
    X86BarrierRegs regs;
    regs.thread = TS_;
    regs.cache = cache_;
    if (Status s = emit_load_pinned_cache(cc_, in_.barrier, regs); !s && barrier_error_.empty()) barrier_error_ = s.error().message;
  }

  void lower(std::uint32_t pc, const DecodedInstr& d);
  void lower_binary(std::uint32_t pc, const DecodedInstr& d);
  void lower_array(std::uint32_t pc, const DecodedInstr& d);

  const LowerInput& in_;
  const ir::Function& f_;
  const std::vector<DecodedInstr>& code_;
  const bool pinned_;  // the cache in a register for this function (see function_uses_cache)
  const FunctionKinds& k_;
  CodeHolder holder_;
  x86::Compiler cc_;
  x86::Gp T_, R_, RET_, TS_, flags_, cache_;
  std::string barrier_error_;
  std::vector<x86::Gp> v_, t_;
  std::vector<Label> labels_, fail_;
  Label exit_error_;
  std::uint32_t pc_ = 0;  // the instruction being lowered
  BarrierMarks marks_{in_};
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
      spill_refs();
      cache_to_thread();
      InvokeNode* call = nullptr;
      cc_.invoke(&call, imm(reinterpret_cast<std::uint64_t>(&sim::rt::safepoint)),
                 FuncSignatureT<std::uint32_t, void*>(CallConvId::kHost));
      call->setArg(0, T_);
      cache_from_thread();
      reload_refs();
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

Lowered X86Lower::run() {
  Lowered out;
  ErrorCatcher errors;
  StringLogger logger;
  holder_.init(in_.runtime->environment());
  holder_.setErrorHandler(&errors);
  if (in_.listing) holder_.setLogger(&logger);
  holder_.attach(&cc_);

  FuncNode* func = cc_.addFunc(
      FuncSignatureT<std::uint32_t, void*, sim::Value*, sim::Value*, ThreadState*>(CallConvId::kHost));
  T_ = cc_.newUIntPtr("thread");
  R_ = cc_.newUIntPtr("regs");
  RET_ = cc_.newUIntPtr("ret");
  TS_ = cc_.newUIntPtr("ts");
  func->setArg(0, T_);
  func->setArg(1, R_);
  func->setArg(2, RET_);
  func->setArg(3, TS_);
  flags_ = cc_.newUIntPtr("type_flags");
  cc_.mov(flags_, imm(reinterpret_cast<std::uint64_t>(in_.type_flags)));
  exit_error_ = cc_.newLabel();
  if (pinned()) {
    cache_ = cc_.newUIntPtr("cache");
    cache_from_thread();
  }
  labels_.assign(code_.size(), Label());
  fail_.assign(code_.size(), Label());
  // Labels only where blocks start, so asmjit's allocator sees the IR's basic blocks.
  for (const DecodedInstr& d : code_)
    for (std::uint32_t t : d.targets) label_at(t);

  // Prologue: registers the frame defines (parameters, and {0, scalar} for the rest, which
  // reads before a definition see) come from their slots; reference slots get their tag once.
  v_.resize(f_.num_regs);
  t_.resize(f_.num_regs);
  std::vector<std::uint8_t> is_param(f_.num_regs, 0);
  for (ir::Reg p : f_.params) is_param[p] = 1;
  for (ir::Reg r = 0; r < f_.num_regs; ++r) {
    v_[r] = cc_.newInt64("v%u", r);
    if (kind(r) == kDynamic) t_[r] = cc_.newUInt64("tag%u", r);
    if (kind(r) == kScalar && !is_param[r] && !k_.maybe_uninit[r]) {
      cc_.xor_(v_[r].r32(), v_[r].r32());
      continue;
    }
    load_value(r);
    if (kind(r) == kRef) cc_.mov(tag_slot(r), 1);
  }

  for (std::uint32_t pc = 0; pc < code_.size(); ++pc) {
    if (labels_[pc].isValid()) cc_.bind(labels_[pc]);
    pc_ = pc;
    lower(pc, code_[pc]);
    if (errors.first != kErrorOk || !barrier_error_.empty()) break;
  }
  // Failed checks: the operands go to their slots and the interpreter's diagnosis says why.
  for (std::uint32_t pc = 0; pc < code_.size(); ++pc) {
    if (!fail_[pc].isValid()) continue;
    cc_.bind(fail_[pc]);
    const DecodedInstr& d = code_[pc];
    for (ir::Reg r : {d.a, d.b, d.c})
      if (r != ir::kNoReg) store_value(r);
    cache_to_thread();
    InvokeNode* call = nullptr;
    cc_.invoke(&call, imm(reinterpret_cast<std::uint64_t>(&sim::rt::fail)),
               FuncSignatureT<std::uint32_t, void*, std::uint32_t, std::uint32_t, sim::Value*>(CallConvId::kHost));
    call->setArg(0, T_);
    call->setArg(1, imm(in_.fn));
    call->setArg(2, imm(pc));
    call->setArg(3, R_);
    cc_.jmp(exit_error_);
  }
  cc_.bind(exit_error_);
  x86::Gp one = cc_.newUInt32("one");
  cc_.mov(one, 1);
  cc_.ret(one);
  cc_.endFunc();
  if (!barrier_error_.empty()) {
    out.error = "barrier: " + barrier_error_;
    return out;
  }
  if (errors.first == kErrorOk) cc_.finalize();
  if (errors.first != kErrorOk) {
    out.error = fmt::format("asmjit: {} ({})", errors.text, DebugUtils::errorAsString(errors.first));
    return out;
  }
  sim::CompiledFn fn = nullptr;
  if (asmjit::Error e = in_.runtime->add(&fn, &holder_); e != kErrorOk) {
    out.error = fmt::format("asmjit: cannot place the code ({})", DebugUtils::errorAsString(e));
    return out;
  }
  out.entry = fn;
  out.code_bytes = holder_.codeSize();
  marks_.resolve(holder_, reinterpret_cast<const void*>(fn), f_.name);
  if (in_.listing) {
    *in_.listing += fmt::format("; {}\n", f_.name);
    in_.listing->append(logger.data(), logger.dataSize());
  }
  return out;
}

}  // namespace

Lowered lower_x86_64(const LowerInput& in) { return X86Lower(in).run(); }

}  // namespace objprof::sim::jit

#else

namespace objprof::sim::jit {
Lowered lower_x86_64(const LowerInput&) { return {nullptr, 0, "unsupported on this arch"}; }
}  // namespace objprof::sim::jit

#endif
