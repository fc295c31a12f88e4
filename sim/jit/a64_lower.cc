// arm64 lowering of a decoded IR function with asmjit's a64::Compiler: the same shape as
// x86_64_lower.cc (see there and docs/jit.md for the frame, kinds and GC discipline). What
// differs on arm64:
//  - slot loads and stores are ldar/stlr (the sim heap's acquire/release slots, which on arm64
//    are not plain moves), so a slot address is computed first;
//  - sdiv does not trap: x / 0 is checked explicitly, and INT64_MIN / -1 gives INT64_MIN, which
//    is the interpreter's wrapping -x; the remainder is x - (x / y) * y (msub);
//  - shifts by register (lslv/asrv) use the count modulo 64 like the IR;
//  - runtime functions are called through a register (blr), as they may be far from the code.
#include "lower.h"

#if defined(__aarch64__)

#include "backends/arm64/a64_barrier.h"

#include <asmjit/arm.h>
#include <asmjit/arm/a64compiler.h>

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

class A64Lower {
 public:
  explicit A64Lower(const LowerInput& in)
      : in_(in),
        f_(*in.request->functions[in.fn].ir),
        code_(*in.request->functions[in.fn].code),
        pinned_(in.barriers && in.barrier.cache == CacheLocation::kPinnedRegister && function_uses_cache(code_)),
        k_((*in.kinds)[in.fn]) {}

  Lowered run();

 private:
  std::uint8_t kind(ir::Reg r) const { return k_.reg[r] == kNoKind ? std::uint8_t{kScalar} : k_.reg[r]; }
  a64::Mem slot(ir::Reg r) const { return arm::ptr(R_, static_cast<std::int32_t>(r) * kSlot); }
  a64::Mem tag_slot(ir::Reg r) const { return arm::ptr(R_, static_cast<std::int32_t>(r) * kSlot + kTagOffset); }
  Label label_at(std::uint32_t pc) {
    if (!labels_[pc].isValid()) labels_[pc] = cc_.newLabel();
    return labels_[pc];
  }
  Label fail_label(std::uint32_t pc) {
    if (!fail_[pc].isValid()) fail_[pc] = cc_.newLabel();
    return fail_[pc];
  }
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
  void spill_refs() {
    for (ir::Reg r = 0; r < f_.num_regs; ++r)
      if (kind(r) & kRef) store_value(r);
  }
  void reload_refs() {
    for (ir::Reg r = 0; r < f_.num_regs; ++r)
      if (kind(r) & kRef) cc_.ldr(v_[r], slot(r));
  }
  void def_tag(ir::Reg dst, std::uint8_t produced) {
    if (kind(dst) != kDynamic) return;
    cc_.mov(t_[dst], Imm(produced == kRef ? 1 : 0));
  }
  void copy_tag(ir::Reg dst, ir::Reg r) {
    if (kind(dst) != kDynamic) return;
    if (kind(r) == kDynamic) cc_.mov(t_[dst], t_[r]);
    else def_tag(dst, kind(r));
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

  void runtime_call(std::uint32_t pc, RtCall fn, bool may_gc, const std::vector<ir::Reg>& operands, ir::Reg dst) {
    for (ir::Reg r : operands)
      if (!(may_gc && (kind(r) & kRef))) store_value(r);
    if (may_gc) spill_refs();
    cache_to_thread();
    InvokeNode* call = call_runtime(reinterpret_cast<const void*>(fn),
                                    FuncSignatureT<std::uint32_t, void*, std::uint32_t, std::uint32_t, sim::Value*>());
    a64::Gp status = cc_.newUInt32("status");
    call->setArg(0, T_);
    call->setArg(1, imm(in_.fn));
    call->setArg(2, imm(pc));
    call->setArg(3, R_);
    call->setRet(0, status);
    cc_.cbnz(status, exit_error_);
    cache_from_thread();
    if (may_gc) reload_refs();
    if (dst != ir::kNoReg && !(may_gc && (kind(dst) & kRef))) load_value(dst);
    else if (dst != ir::kNoReg && kind(dst) == kDynamic) cc_.ldrb(t_[dst].w(), tag_slot(dst));
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

  void barrier(ir::Reg r, const DecodedInstr& d, unsigned operand) {
    if (!(d.kept >> operand & 1) || !in_.barriers) return;
    const EmitterConfig cfg = site_config(in_.barrier, d.cache_use[operand]);
    A64BarrierRegs regs;
    regs.obj = v_[r];
    regs.thread = TS_;
    regs.desc = desc_;
    regs.cache = pinned() ? cache_ : a64::Gp();
    for (auto& g : regs.scratch) g = cc_.newUInt64("bs");
    marks_.around(cc_, pc_, [&] {
      if (Status s = emit_access_barrier(cc_, cfg, *in_.request->desc, regs); !s && barrier_error_.empty())
        barrier_error_ = s.error().message;
    });
  }
  bool pinned() const { return pinned_; }
  A64BarrierRegs cache_regs() const {
    A64BarrierRegs regs;
    regs.thread = TS_;
    regs.cache = cache_;
    return regs;
  }
  void cache_to_thread() {
    if (!pinned()) return;
    if (Status s = emit_store_pinned_cache(cc_, in_.barrier, cache_regs()); !s && barrier_error_.empty()) barrier_error_ = s.error().message;
  }
  void cache_from_thread() {
    if (!pinned()) return;
    if (Status s = emit_load_pinned_cache(cc_, in_.barrier, cache_regs()); !s && barrier_error_.empty()) barrier_error_ = s.error().message;
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
  a64::Compiler cc_;
  a64::Gp T_, R_, RET_, TS_, flags_, cache_;
  // &BarrierDescriptor in a register for the whole method: on arm64 a 64-bit immediate takes up
  // to four instructions, so the barrier loads its bounds and bitmap through this register
  // (BoundsSource::kDescriptor, set by the driver) instead of materializing three addresses.
  a64::Gp desc_;
  std::string barrier_error_;
  std::vector<a64::Gp> v_, t_;
  std::vector<Label> labels_, fail_;
  Label exit_error_;
  std::uint32_t pc_ = 0;  // the instruction being lowered
  BarrierMarks marks_{in_};
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
      spill_refs();
      cache_to_thread();
      InvokeNode* call = call_runtime(reinterpret_cast<const void*>(&sim::rt::safepoint),
                                      FuncSignatureT<std::uint32_t, void*>());
      call->setArg(0, T_);
      cache_from_thread();
      reload_refs();
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

Lowered A64Lower::run() {
  Lowered out;
  ErrorCatcher errors;
  StringLogger logger;
  holder_.init(in_.runtime->environment());
  holder_.setErrorHandler(&errors);
  if (in_.listing) holder_.setLogger(&logger);
  holder_.attach(&cc_);

  FuncNode* func = cc_.addFunc(FuncSignatureT<std::uint32_t, void*, sim::Value*, sim::Value*, ThreadState*>());
  T_ = cc_.newUIntPtr("thread");
  R_ = cc_.newUIntPtr("regs");
  RET_ = cc_.newUIntPtr("ret");
  TS_ = cc_.newUIntPtr("ts");
  func->setArg(0, T_);
  func->setArg(1, R_);
  func->setArg(2, RET_);
  func->setArg(3, TS_);
  flags_ = cc_.newUIntPtr("type_flags");
  mov_imm(flags_, reinterpret_cast<std::uint64_t>(in_.type_flags));
  exit_error_ = cc_.newLabel();
  if (in_.barriers) {
    desc_ = cc_.newUIntPtr("desc");
    mov_imm(desc_, reinterpret_cast<std::uint64_t>(in_.request->desc));
  }
  if (pinned()) {
    cache_ = cc_.newUIntPtr("cache");
    cache_from_thread();
  }
  labels_.assign(code_.size(), Label());
  fail_.assign(code_.size(), Label());
  for (const DecodedInstr& d : code_)
    for (std::uint32_t t : d.targets) label_at(t);

  v_.resize(f_.num_regs);
  t_.resize(f_.num_regs);
  std::vector<std::uint8_t> is_param(f_.num_regs, 0);
  for (ir::Reg p : f_.params) is_param[p] = 1;
  a64::Gp one;
  for (ir::Reg r = 0; r < f_.num_regs; ++r) {
    v_[r] = cc_.newInt64("v%u", r);
    if (kind(r) == kDynamic) t_[r] = cc_.newUInt64("tag%u", r);
    if (kind(r) == kScalar && !is_param[r] && !k_.maybe_uninit[r]) {
      cc_.mov(v_[r], Imm(0));
      continue;
    }
    load_value(r);
    if (kind(r) == kRef) {
      if (!one.isValid()) {
        one = cc_.newUInt32("one");
        cc_.mov(one, Imm(1));
      }
      cc_.strb(one, tag_slot(r));
    }
  }

  for (std::uint32_t pc = 0; pc < code_.size(); ++pc) {
    if (labels_[pc].isValid()) cc_.bind(labels_[pc]);
    pc_ = pc;
    lower(pc, code_[pc]);
    if (errors.first != kErrorOk || !barrier_error_.empty()) break;
  }
  for (std::uint32_t pc = 0; pc < code_.size(); ++pc) {
    if (!fail_[pc].isValid()) continue;
    cc_.bind(fail_[pc]);
    const DecodedInstr& d = code_[pc];
    for (ir::Reg r : {d.a, d.b, d.c})
      if (r != ir::kNoReg) store_value(r);
    cache_to_thread();
    InvokeNode* call = call_runtime(reinterpret_cast<const void*>(&sim::rt::fail),
                                    FuncSignatureT<std::uint32_t, void*, std::uint32_t, std::uint32_t, sim::Value*>());
    call->setArg(0, T_);
    call->setArg(1, imm(in_.fn));
    call->setArg(2, imm(pc));
    call->setArg(3, R_);
    cc_.b(exit_error_);
  }
  cc_.bind(exit_error_);
  a64::Gp failed = cc_.newUInt32("failed");
  cc_.mov(failed, Imm(1));
  cc_.ret(failed);
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

Lowered lower_arm64(const LowerInput& in) { return A64Lower(in).run(); }

}  // namespace objprof::sim::jit

#else

namespace objprof::sim::jit {
Lowered lower_arm64(const LowerInput&) { return {nullptr, 0, "unsupported on this arch"}; }
}  // namespace objprof::sim::jit

#endif
