// The part of lowering an IR function that is the same on x86_64 and arm64 (x86_64_lower.cc,
// a64_lower.cc): the frame's layout, the walk over the decoded instructions with a label at
// every block start and one failure block per checked instruction, the frame's GC discipline
// (references stored to their slots before anything that may collect, reloaded after), the
// pinned cache around calls, the barrier at every kept access, and placing the code. Each
// lowering derives from LowerCore and supplies its instruction selection, as asmjit keeps
// core/ apart from x86/ and arm/; docs/jit.md describes the frame and the kinds.
#pragma once

#include "lower.h"

#include <asmjit/core.h>

#include <fmt/core.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace objprof::sim::jit {

// Frame slots are sim::Values (a word and a tag byte saying "reference"); objects start with a
// header, arrays keep their length in its second word.
inline constexpr std::int32_t kSlot = sizeof(sim::Value);
inline constexpr std::int32_t kTagOffset = offsetof(sim::Value, ref);
inline constexpr std::int32_t kFirstSlot = 16;  // sim::kHeaderBytes
inline constexpr std::int32_t kLengthOffset = 8;

// Keeps asmjit's first error and its message, for the compile error.
class ErrorCatcher final : public asmjit::ErrorHandler {
 public:
  void handleError(asmjit::Error err, const char* message, asmjit::BaseEmitter*) override {
    if (first == asmjit::kErrorOk) {
      first = err;
      text = message;
    }
  }
  asmjit::Error first = asmjit::kErrorOk;
  std::string text;
};

// sim::rt::alloc, call and fail: (thread, function, pc, frame) -> nonzero when the method must
// return with an error.
using RtCall = std::uint32_t (*)(void*, std::uint32_t, std::uint32_t, sim::Value*) noexcept;

// Arch names the lowering's asmjit types: Compiler, Gp, and the barrier's register set
// BarrierRegs. Lowering derives from LowerCore<Lowering, Arch> and supplies (private, with
// LowerCore a friend):
//   store_value(r), load_value(r)   a register (and its tag when dynamic) <-> its frame slot
//   reload_value(r), load_tag(r)    the value alone (a GC moves objects, tags stay), the tag alone
//   zero(r)                         r = 0, for a scalar whose slot no read can see
//   tag_ref_slot(r)                 r's slot tag = 1 (a reference register's slot)
//   load_constant(dst, value)       dst = a 64-bit constant
//   new_scratch()                   a register for the barrier to clobber
//   call_runtime(fn, signature)     the InvokeNode of a call to a runtime function
//   jump(l), jump_if_nonzero(reg, l)
//   set_up()                        after the flags table's address, before the pinned cache
//   return_failure()                return 1: the interpreter's diagnosis has run
//   lower(pc, d)                    one decoded instruction
template <typename Lowering, typename Arch>
class LowerCore {
 public:
  explicit LowerCore(const LowerInput& in)
      : in_(in),
        f_(*in.request->functions[in.fn].ir),
        code_(*in.request->functions[in.fn].code),
        pinned_(in.barriers && in.barrier.cache == backends::CacheLocation::kPinnedRegister &&
                function_uses_cache(code_)),
        k_((*in.kinds)[in.fn]) {}

  Lowered run() {
    ErrorCatcher errors;
    asmjit::StringLogger logger;
    holder_.init(in_.runtime->environment());
    holder_.setErrorHandler(&errors);
    if (in_.listing) holder_.setLogger(&logger);
    holder_.attach(&cc_);

    asmjit::FuncNode* func = cc_.addFunc(
        asmjit::FuncSignatureT<std::uint32_t, void*, sim::Value*, sim::Value*, ThreadState*>(asmjit::CallConvId::kHost));
    T_ = cc_.newUIntPtr("thread");
    R_ = cc_.newUIntPtr("regs");
    RET_ = cc_.newUIntPtr("ret");
    TS_ = cc_.newUIntPtr("ts");
    func->setArg(0, T_);
    func->setArg(1, R_);
    func->setArg(2, RET_);
    func->setArg(3, TS_);
    flags_ = cc_.newUIntPtr("type_flags");
    self().load_constant(flags_, reinterpret_cast<std::uint64_t>(in_.type_flags));
    exit_error_ = cc_.newLabel();
    self().set_up();
    if (pinned()) {
      cache_ = cc_.newUIntPtr("cache");
      cache_from_thread();
    }
    labels_.assign(code_.size(), asmjit::Label());
    fail_.assign(code_.size(), asmjit::Label());
    // Labels only where blocks start, so asmjit's allocator sees the IR's basic blocks.
    for (const sim::DecodedInstr& d : code_)
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
        self().zero(r);
        continue;
      }
      self().load_value(r);
      if (kind(r) == kRef) self().tag_ref_slot(r);
    }

    for (std::uint32_t pc = 0; pc < code_.size(); ++pc) {
      if (labels_[pc].isValid()) cc_.bind(labels_[pc]);
      pc_ = pc;
      self().lower(pc, code_[pc]);
      if (errors.first != asmjit::kErrorOk || !barrier_error_.empty()) break;
    }
    // Failed checks: the operands go to their slots and the interpreter's diagnosis says why.
    for (std::uint32_t pc = 0; pc < code_.size(); ++pc) {
      if (!fail_[pc].isValid()) continue;
      cc_.bind(fail_[pc]);
      const sim::DecodedInstr& d = code_[pc];
      for (ir::Reg r : {d.a, d.b, d.c})
        if (r != ir::kNoReg) self().store_value(r);
      cache_to_thread();
      asmjit::InvokeNode* call = self().call_runtime(reinterpret_cast<const void*>(&sim::rt::fail), rt_signature());
      call->setArg(0, T_);
      call->setArg(1, asmjit::imm(in_.fn));
      call->setArg(2, asmjit::imm(pc));
      call->setArg(3, R_);
      self().jump(exit_error_);
    }
    cc_.bind(exit_error_);
    self().return_failure();
    cc_.endFunc();
    return place(errors, logger);
  }

 protected:
  using Gp = typename Arch::Gp;

  // Kind of an IR register as the lowering uses it (never-defined registers are scalars).
  std::uint8_t kind(ir::Reg r) const { return k_.reg[r] == kNoKind ? std::uint8_t{kScalar} : k_.reg[r]; }
  asmjit::Label label_at(std::uint32_t pc) {
    if (!labels_[pc].isValid()) labels_[pc] = cc_.newLabel();
    return labels_[pc];
  }
  asmjit::Label fail_label(std::uint32_t pc) {
    if (!fail_[pc].isValid()) fail_[pc] = cc_.newLabel();
    return fail_[pc];
  }

  void spill_refs() {
    for (ir::Reg r = 0; r < f_.num_regs; ++r)
      if (kind(r) & kRef) self().store_value(r);
  }
  void reload_refs() {
    for (ir::Reg r = 0; r < f_.num_regs; ++r)
      if (kind(r) & kRef) self().reload_value(r);  // tags do not change in a GC
  }
  // Defines `dst`'s tag after an instruction produced a value of static kind `produced`.
  void def_tag(ir::Reg dst, std::uint8_t produced) {
    if (kind(dst) != kDynamic) return;
    cc_.mov(t_[dst], asmjit::Imm(produced == kRef ? 1 : 0));
  }
  // Tag of `r` into the tag of `dst` (a move).
  void copy_tag(ir::Reg dst, ir::Reg r) {
    if (kind(dst) != kDynamic) return;
    if (kind(r) == kDynamic) cc_.mov(t_[dst], t_[r]);
    else def_tag(dst, kind(r));
  }

  static asmjit::FuncSignatureT<std::uint32_t, void*, std::uint32_t, std::uint32_t, sim::Value*> rt_signature() {
    return asmjit::FuncSignatureT<std::uint32_t, void*, std::uint32_t, std::uint32_t, sim::Value*>(
        asmjit::CallConvId::kHost);
  }

  // A runtime call at `pc`: operands to their slots, references too when it may GC.
  void runtime_call(std::uint32_t pc, RtCall fn, bool may_gc, const std::vector<ir::Reg>& operands, ir::Reg dst) {
    for (ir::Reg r : operands)
      if (!(may_gc && (kind(r) & kRef))) self().store_value(r);
    if (may_gc) spill_refs();
    cache_to_thread();
    asmjit::InvokeNode* call = self().call_runtime(reinterpret_cast<const void*>(fn), rt_signature());
    Gp status = cc_.newUInt32("status");
    call->setArg(0, T_);
    call->setArg(1, asmjit::imm(in_.fn));
    call->setArg(2, asmjit::imm(pc));
    call->setArg(3, R_);
    call->setRet(0, status);
    self().jump_if_nonzero(status, exit_error_);
    cache_from_thread();
    if (may_gc) reload_refs();
    if (dst != ir::kNoReg && !(may_gc && (kind(dst) & kRef))) self().load_value(dst);
    else if (dst != ir::kNoReg && kind(dst) == kDynamic) self().load_tag(dst);
  }

  // A pending collection at a safepoint: the references to their slots while the runtime parks
  // the thread, and back from them after (the collector may have moved the objects).
  void park_at_safepoint() {
    spill_refs();
    cache_to_thread();
    asmjit::InvokeNode* call = self().call_runtime(reinterpret_cast<const void*>(&sim::rt::safepoint),
                                                   asmjit::FuncSignatureT<std::uint32_t, void*>(asmjit::CallConvId::kHost));
    call->setArg(0, T_);
    cache_from_thread();
    reload_refs();
  }

  // The barrier, inline (backends/) with virtual registers: the allocator picks its scratch
  // registers around the IR's.
  void barrier(ir::Reg r, const sim::DecodedInstr& d, unsigned operand) {
    if (!(d.kept >> operand & 1) || !in_.barriers) return;
    const backends::EmitterConfig cfg = site_config(in_.barrier, d.cache_use[operand]);
    typename Arch::BarrierRegs regs = cache_regs();
    regs.obj = v_[r];
    regs.desc = desc_;
    for (auto& g : regs.scratch) g = self().new_scratch();
    marks_.around(cc_, pc_, [&] { note_barrier_error(emit_access_barrier(cc_, cfg, *in_.request->desc, regs)); });
  }
  bool pinned() const { return pinned_; }
  // A pinned cache lives in a register inside the method; callees, the interpreter and the
  // collector (which resets it at gc_end) use the ThreadState field, so write it back before
  // every call and reload it after.
  void cache_to_thread() {
    if (pinned()) note_barrier_error(emit_store_pinned_cache(cc_, in_.barrier, cache_regs()));
  }
  void cache_from_thread() {
    if (pinned()) note_barrier_error(emit_load_pinned_cache(cc_, in_.barrier, cache_regs()));
  }

  const LowerInput& in_;
  const ir::Function& f_;
  const std::vector<sim::DecodedInstr>& code_;
  const bool pinned_;  // the cache in a register for this function (see function_uses_cache)
  const FunctionKinds& k_;
  asmjit::CodeHolder holder_;
  typename Arch::Compiler cc_;
  Gp T_, R_, RET_, TS_, flags_, cache_;
  // &BarrierDescriptor in a register for the whole method, where the lowering keeps one
  // (arm64: a64_lower.cc says why); invalid otherwise, and the barrier bakes &desc in.
  Gp desc_;
  std::string barrier_error_;
  std::vector<Gp> v_, t_;
  std::vector<asmjit::Label> labels_, fail_;
  asmjit::Label exit_error_;
  std::uint32_t pc_ = 0;  // the instruction being lowered
  BarrierMarks marks_{in_};

 private:
  Lowering& self() { return static_cast<Lowering&>(*this); }

  // The thread and pinned cache registers, all the cache's load and store need.
  typename Arch::BarrierRegs cache_regs() const {
    typename Arch::BarrierRegs regs;
    regs.thread = TS_;
    regs.cache = cache_;
    return regs;
  }
  // The first barrier error fails the compile.
  void note_barrier_error(const Status& s) {
    if (!s && barrier_error_.empty()) barrier_error_ = s.error().message;
  }

  // Finalizes the function and places it in the runtime.
  Lowered place(const ErrorCatcher& errors, const asmjit::StringLogger& logger) {
    Lowered out;
    if (!barrier_error_.empty()) {
      out.error = "barrier: " + barrier_error_;
      return out;
    }
    if (errors.first == asmjit::kErrorOk) cc_.finalize();
    if (errors.first != asmjit::kErrorOk) {
      out.error = fmt::format("asmjit: {} ({})", errors.text, asmjit::DebugUtils::errorAsString(errors.first));
      return out;
    }
    sim::CompiledFn fn = nullptr;
    if (asmjit::Error e = in_.runtime->add(&fn, &holder_); e != asmjit::kErrorOk) {
      out.error = fmt::format("asmjit: cannot place the code ({})", asmjit::DebugUtils::errorAsString(e));
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
};

}  // namespace objprof::sim::jit
