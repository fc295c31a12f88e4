// x86_64 access barrier emitter: x86_64's instructions for the steps and checks both ISAs share
// (barrier_sequence.h). The sequence is in x86_barrier.h; docs/backends.md explains the register
// choices.
#include "backends/x86_64/x86_barrier.h"

#include "backends/barrier_sequence.h"

#include <limits>

namespace objprof::backends {

namespace x86 = asmjit::x86;

X86BarrierRegs X86BarrierRegs::sysv(x86::Gp obj) noexcept {
  X86BarrierRegs r;
  r.obj = obj;
  r.thread = x86::r15;
  r.cache = x86::r14;
  r.scratch = {x86::r10, x86::r11, x86::rax};
  return r;
}

namespace {

// What the shared steps (barrier_sequence.h) need to know of x86_64.
struct X86 {
  using Emitter = x86::Emitter;
  using Gp = x86::Gp;
  using Mem = x86::Mem;
  using Regs = X86BarrierRegs;
  static constexpr Isa kIsa = Isa::kX86_64;
  static constexpr asmjit::Arch kArch = asmjit::Arch::kX64;
  static constexpr const char* kArchName = "x86_64";
  static bool is_wide(const Gp& g) { return g.isGpq(); }
  static bool is_reserved(const Gp& g) { return g.id() == x86::Gp::kIdSp; }
  static constexpr const char* kNotWide = "must be a 64-bit general-purpose register";
  static constexpr const char* kReserved = "cannot be rsp";
  static constexpr const char* kPinnedPair = "thread and cache must be distinct 64-bit registers other than rsp";
  static int scratch_count(const EmitterConfig&) { return kX86ScratchCount; }
  // [thread + off]; validate(Isa::kX86_64) checked that off fits the 32-bit displacement.
  static Mem thread_field(const Gp& thread, std::int64_t off) {
    return x86::qword_ptr(thread, static_cast<std::int32_t>(off));
  }
};

bool fits_i32(std::int64_t v) {
  return v >= std::numeric_limits<std::int32_t>::min() && v <= std::numeric_limits<std::int32_t>::max();
}

// x86_64's instructions for the shared steps; registers are validated.
class X86Barrier : public detail::BarrierSequence<X86Barrier, X86> {
 private:
  friend BarrierSequence;

  X86Barrier(x86::Emitter& e, const EmitterConfig& cfg, const BarrierDescriptor& desc, const X86BarrierRegs& r)
      : BarrierSequence(e, cfg, desc, r), t0_(r.scratch[0]), t1_(r.scratch[1]), t2_(r.scratch[2]) {}

  // Owner-thread counters: a non-locked increment in memory.
  Status bump(std::int64_t off) { OBJPROF_EMIT(e_.inc(thread_field(off))); return Status::Ok(); }
  Status jump(asmjit::Label l) { OBJPROF_EMIT(e_.jmp(l)); return Status::Ok(); }
  Status jump_on_hit(asmjit::Label l) { OBJPROF_EMIT(e_.je(l)); return Status::Ok(); }
  Status jump_on_miss(asmjit::Label l) { OBJPROF_EMIT(e_.jne(l)); return Status::Ok(); }
  Status load_address(const x86::Gp& dst, std::uint64_t value) {
    OBJPROF_EMIT(e_.mov(dst, asmjit::Imm(value)));
    return Status::Ok();
  }

  Status compare_cache_field() { OBJPROF_EMIT(e_.cmp(r_.obj, thread_field(cfg_.fields.cache))); return Status::Ok(); }
  Status compare_cache_register() { OBJPROF_EMIT(e_.cmp(r_.obj, r_.cache)); return Status::Ok(); }
  Status store_cache_field() { OBJPROF_EMIT(e_.mov(thread_field(cfg_.fields.cache), r_.obj)); return Status::Ok(); }

  // t0 = obj - begin; unsigned t0 >= size -> done_ (null and addresses below begin wrap).
  Status range_check() {
    if (cfg_.bounds == BoundsSource::kDescriptor) {
      x86::Gp d;
      if (Status s = desc_base(d); !s) return s;
      OBJPROF_EMIT(e_.mov(t0_, r_.obj));
      OBJPROF_EMIT(e_.sub(t0_, x86::qword_ptr(d, barrier_layout::kBeginOffset)));
      OBJPROF_EMIT(e_.cmp(t0_, x86::qword_ptr(d, barrier_layout::kSizeOffset)));
    } else {
      const auto neg_begin = static_cast<std::int64_t>(0 - desc_.begin);
      if (fits_i32(neg_begin)) {
        OBJPROF_EMIT(e_.lea(t0_, x86::qword_ptr(r_.obj, static_cast<std::int32_t>(neg_begin))));
      } else {
        OBJPROF_EMIT(e_.mov(t0_, asmjit::Imm(neg_begin)));
        OBJPROF_EMIT(e_.add(t0_, r_.obj));
      }
      if (desc_.size <= static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max())) {
        OBJPROF_EMIT(e_.cmp(t0_, asmjit::Imm(static_cast<std::int64_t>(desc_.size))));
      } else {
        OBJPROF_EMIT(e_.mov(t1_, asmjit::Imm(desc_.size)));
        OBJPROF_EMIT(e_.cmp(t0_, t1_));
      }
    }
    OBJPROF_EMIT(e_.jae(done_));
    return Status::Ok();
  }

  // Sets bit (t0 >> log2K) of the active bitmap.
  Status set_bit() {
    const std::uint32_t log2k = desc_.log2_granule;
    OBJPROF_EMIT(e_.mov(t1_, t0_));
    OBJPROF_EMIT(e_.shr(t1_, log2k + 3));  // byte index
    x86::Gp d;
    if (Status s = desc_base(d); !s) return s;
    OBJPROF_EMIT(e_.add(t1_, x86::qword_ptr(d, barrier_layout::kBitmapOffset)));  // byte address
    if (log2k != 0) OBJPROF_EMIT(e_.shr(t0_, log2k));
    OBJPROF_EMIT(e_.and_(t0_.r32(), 7));  // bit index
    OBJPROF_EMIT(e_.xor_(t2_.r32(), t2_.r32()));
    OBJPROF_EMIT(e_.bts(t2_.r32(), t0_.r32()));  // mask; bts reg,reg is one cycle and needs no cl
    const x86::Mem byte = x86::byte_ptr(t1_);
    asmjit::Label marked = done_;
    switch (cfg_.mark) {
      case MarkMode::kRacyTestFirst:
        marked = e_.newLabel();
        OBJPROF_EMIT(e_.test(byte, t2_.r8()));
        OBJPROF_EMIT(e_.jnz(marked));
        [[fallthrough]];
      case MarkMode::kRacy: OBJPROF_EMIT(e_.or_(byte, t2_.r8())); break;
      case MarkMode::kAtomicTestFirst:
        marked = e_.newLabel();
        OBJPROF_EMIT(e_.test(byte, t2_.r8()));
        OBJPROF_EMIT(e_.jnz(marked));
        [[fallthrough]];
      case MarkMode::kAtomic: OBJPROF_EMIT(e_.lock().or_(byte, t2_.r8())); break;
      case MarkMode::kBuffered:  // refused by EmitterConfig::validate
        return make_error(ErrorCode::kUnsupported, "buffered marks are not emitted");
    }
    if (marked != done_) OBJPROF_EMIT(e_.bind(marked));
    return Status::Ok();
  }

  x86::Gp t0_, t1_, t2_;
};

}  // namespace

Status emit_access_barrier(asmjit::BaseEmitter& e, const EmitterConfig& cfg, const BarrierDescriptor& desc,
                           const X86BarrierRegs& regs) {
  return X86Barrier::checked_emit(e, cfg, desc, regs);
}

Status emit_access_barrier_fast(asmjit::BaseEmitter& e, const EmitterConfig& cfg, const BarrierDescriptor& desc,
                                const X86BarrierRegs& regs, asmjit::Label slow) {
  return X86Barrier::checked_emit_fast(e, cfg, desc, regs, slow);
}

Status emit_access_barrier_slow(asmjit::BaseEmitter& e, const EmitterConfig& cfg, const BarrierDescriptor& desc,
                                const X86BarrierRegs& regs, asmjit::Label slow, asmjit::Label resume) {
  return X86Barrier::checked_emit_slow(e, cfg, desc, regs, slow, resume);
}

// The pinned cache register <-> its word at [thread + cfg.fields.cache].
Status emit_load_pinned_cache(asmjit::BaseEmitter& e, const EmitterConfig& cfg, const X86BarrierRegs& regs) {
  if (Status s = detail::check_pinned_cache<X86>(e, cfg, regs); !s) return s;
  OBJPROF_EMIT(e.as<x86::Emitter>()->mov(regs.cache, X86::thread_field(regs.thread, cfg.fields.cache)));
  return Status::Ok();
}

Status emit_store_pinned_cache(asmjit::BaseEmitter& e, const EmitterConfig& cfg, const X86BarrierRegs& regs) {
  if (Status s = detail::check_pinned_cache<X86>(e, cfg, regs); !s) return s;
  OBJPROF_EMIT(e.as<x86::Emitter>()->mov(X86::thread_field(regs.thread, cfg.fields.cache), regs.cache));
  return Status::Ok();
}

}  // namespace objprof::backends
