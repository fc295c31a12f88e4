// Host-native barrier thunks (see barrier_thunk.h). Each architecture's prologue saves only
// the callee-saved registers the conventions reserve (thread and pinned cache); the barrier's
// scratch registers are caller-saved in both ABIs, so nothing else needs saving.
#include "backends/barrier_thunk.h"

#include "backends/barrier_emitter.h"
#include "backends/emit_util.h"

#if defined(__aarch64__)
#include <asmjit/arm/a64assembler.h>
#endif

namespace objprof::backends {

namespace {

// The body is the same for both ABIs: the pinned cache loaded after the prologue and stored
// back before the epilogue, one barrier per object (or its fast half, the slow half after the
// return). Abi supplies the frame, the argument registers and the loop's instructions.
template <typename Abi>
Status emit_thunk_for(asmjit::CodeHolder& code, const EmitterConfig& cfg, const BarrierDescriptor& desc, ThunkKind kind,
                      const ThunkOptions& options) {
  typename Abi::Assembler a(&code);
  const typename Abi::Regs regs = Abi::regs(kind, options.desc_register);
  const asmjit::Label slow = a.newLabel(), resume = a.newLabel();
  auto barrier = [&]() -> Status {
    if (!options.out_of_line) return emit_access_barrier(a, cfg, desc, regs);
    if (Status s = emit_access_barrier_fast(a, cfg, desc, regs, slow); !s) return s;
    OBJPROF_EMIT(a.bind(resume));
    return Status::Ok();
  };
  const bool pinned = cfg.cache == CacheLocation::kPinnedRegister;
  if (Status s = Abi::prologue(a); !s) return s;
  if (pinned)
    if (Status s = emit_load_pinned_cache(a, cfg, regs); !s) return s;
  const asmjit::Label end = a.newLabel();
  if (kind == ThunkKind::kSingle) {
    if (Status s = barrier(); !s) return s;
  } else {
    const asmjit::Label top = a.newLabel();
    if (Status s = Abi::loop_entry(a, top, end); !s) return s;
    if (Status s = barrier(); !s) return s;
    if (Status s = Abi::loop_next(a, top); !s) return s;
  }
  OBJPROF_EMIT(a.bind(end));
  if (pinned)
    if (Status s = emit_store_pinned_cache(a, cfg, regs); !s) return s;
  if (Status s = Abi::epilogue(a); !s) return s;
  if (options.out_of_line) return emit_access_barrier_slow(a, cfg, desc, regs, slow, resume);
  return Status::Ok();
}

#if defined(__x86_64__)
namespace x86 = asmjit::x86;

// SysV: rdi = thread, rsi = desc, rdx = obj (kSingle) or objs (kLoop), rcx = n.
struct SysV {
  using Assembler = x86::Assembler;
  using Regs = X86BarrierRegs;

  static Regs regs(ThunkKind kind, bool desc_register) {
    Regs regs = X86BarrierRegs::sysv(kind == ThunkKind::kSingle ? x86::rdx : x86::r8);
    if (desc_register) regs.desc = x86::rsi;
    return regs;
  }
  static Status prologue(Assembler& a) {
    OBJPROF_EMIT(a.push(x86::r15));
    OBJPROF_EMIT(a.push(x86::r14));
    OBJPROF_EMIT(a.mov(x86::r15, x86::rdi));
    return Status::Ok();
  }
  // n == 0 skips the loop; each iteration loads the next object into r8.
  static Status loop_entry(Assembler& a, asmjit::Label top, asmjit::Label end) {
    OBJPROF_EMIT(a.test(x86::rcx, x86::rcx));
    OBJPROF_EMIT(a.jz(end));
    OBJPROF_EMIT(a.align(asmjit::AlignMode::kCode, 16));
    OBJPROF_EMIT(a.bind(top));
    OBJPROF_EMIT(a.mov(x86::r8, x86::qword_ptr(x86::rdx)));
    return Status::Ok();
  }
  static Status loop_next(Assembler& a, asmjit::Label top) {
    OBJPROF_EMIT(a.add(x86::rdx, 8));
    OBJPROF_EMIT(a.dec(x86::rcx));
    OBJPROF_EMIT(a.jnz(top));
    return Status::Ok();
  }
  static Status epilogue(Assembler& a) {
    OBJPROF_EMIT(a.pop(x86::r14));
    OBJPROF_EMIT(a.pop(x86::r15));
    OBJPROF_EMIT(a.ret());
    return Status::Ok();
  }
};
using HostAbi = SysV;
#elif defined(__aarch64__)
namespace a64 = asmjit::a64;

// AAPCS64: x0 = thread, x1 = desc, x2 = obj (kSingle) or objs (kLoop), x3 = n.
struct Aapcs64 {
  using Assembler = a64::Assembler;
  using Regs = A64BarrierRegs;

  static Regs regs(ThunkKind kind, bool desc_register) {
    Regs regs = A64BarrierRegs::art(kind == ThunkKind::kSingle ? a64::x2 : a64::x4);
    if (desc_register) regs.desc = a64::x1;
    return regs;
  }
  static Status prologue(Assembler& a) {
    OBJPROF_EMIT(a.stp(a64::x19, a64::x21, asmjit::arm::ptr_pre(a64::sp, -16)));
    OBJPROF_EMIT(a.mov(a64::x19, a64::x0));
    return Status::Ok();
  }
  // n == 0 skips the loop; each iteration loads the next object into x4.
  static Status loop_entry(Assembler& a, asmjit::Label top, asmjit::Label end) {
    OBJPROF_EMIT(a.cbz(a64::x3, end));
    OBJPROF_EMIT(a.bind(top));
    OBJPROF_EMIT(a.ldr(a64::x4, asmjit::arm::ptr_post(a64::x2, 8)));
    return Status::Ok();
  }
  static Status loop_next(Assembler& a, asmjit::Label top) {
    OBJPROF_EMIT(a.subs(a64::x3, a64::x3, asmjit::Imm(1)));
    OBJPROF_EMIT(a.b_ne(top));
    return Status::Ok();
  }
  static Status epilogue(Assembler& a) {
    OBJPROF_EMIT(a.ldp(a64::x19, a64::x21, asmjit::arm::ptr_post(a64::sp, 16)));
    OBJPROF_EMIT(a.ret(a64::x30));
    return Status::Ok();
  }
};
using HostAbi = Aapcs64;
#endif

}  // namespace

bool barrier_thunks_supported() noexcept {
#if defined(__x86_64__) || defined(__aarch64__)
  return true;
#else
  return false;
#endif
}

Result<BarrierThunk> BarrierThunk::compile(asmjit::JitRuntime& rt, const EmitterConfig& cfg,
                                           const BarrierDescriptor& desc, ThunkKind kind, ThunkOptions options) {
#if defined(__x86_64__) || defined(__aarch64__)
  if (cfg.fields != ThreadFields{})
    return make_error(ErrorCode::kInvalidArgument, "barrier thunk " + cfg.name() +
                                                       ": a thunk is called with a ThreadState*, so the cache and "
                                                       "counters must be at ThreadState's offsets");
  asmjit::CodeHolder code;
  if (Status s = detail::asmjit_status(code.init(rt.environment()), "CodeHolder::init"); !s)
    return s.error();
  if (Status s = emit_thunk_for<HostAbi>(code, cfg, desc, kind, options); !s) return s.error();
  void* fn = nullptr;
  if (Status s = detail::asmjit_status(rt.add(&fn, &code), "JitRuntime::add"); !s) return s.error();
  return BarrierThunk(&rt, fn, kind);
#else
  (void)rt, (void)cfg, (void)desc, (void)kind, (void)options;
  return make_error(ErrorCode::kUnsupported, "barrier thunks run only on x86_64 and arm64 hosts");
#endif
}

BarrierThunk::BarrierThunk(BarrierThunk&& other) noexcept : rt_(other.rt_), fn_(other.fn_), kind_(other.kind_) {
  other.fn_ = nullptr;
}

BarrierThunk& BarrierThunk::operator=(BarrierThunk&& other) noexcept {
  if (this != &other) {
    if (fn_ != nullptr) rt_->release(fn_);
    rt_ = other.rt_;
    fn_ = other.fn_;
    kind_ = other.kind_;
    other.fn_ = nullptr;
  }
  return *this;
}

BarrierThunk::~BarrierThunk() {
  if (fn_ != nullptr) rt_->release(fn_);
}

}  // namespace objprof::backends
