// arm64 access barrier emitter: arm64's instructions for the steps and checks both ISAs share
// (barrier_sequence.h). The sequence is in a64_barrier.h; docs/backends.md puts it beside seed
// 001 §2.3's and explains the register choices.
#include "backends/arm64/a64_barrier.h"

#include "backends/barrier_sequence.h"

namespace objprof::backends {

namespace a64 = asmjit::a64;

A64BarrierRegs A64BarrierRegs::art(a64::Gp obj) noexcept {
  A64BarrierRegs r;
  r.obj = obj;
  return r;
}

A64Atomics a64_resolve_atomics(A64Atomics a) noexcept {
  if (a != A64Atomics::kAuto) return a;
#if defined(__aarch64__)
  if (asmjit::CpuInfo::host().hasFeature(asmjit::CpuFeatures::ARM::kLSE)) return A64Atomics::kLse;
#endif
  return A64Atomics::kExclusive;
}

int a64_scratch_count(const EmitterConfig& cfg) noexcept {
  const bool exclusive_loop =
      cfg.mark != MarkMode::kRacy && cfg.mark != MarkMode::kRacyTestFirst &&
      a64_resolve_atomics(cfg.a64_atomics) == A64Atomics::kExclusive;
  return exclusive_loop ? 4 : 3;
}

namespace {

// What the shared steps (barrier_sequence.h) need to know of arm64.
struct A64 {
  using Emitter = a64::Emitter;
  using Gp = a64::Gp;
  using Mem = a64::Mem;
  using Regs = A64BarrierRegs;
  static constexpr Isa kIsa = Isa::kArm64;
  static constexpr asmjit::Arch kArch = asmjit::Arch::kAArch64;
  static constexpr const char* kArchName = "AArch64";
  static bool is_wide(const Gp& g) { return g.isGpX(); }
  static bool is_reserved(const Gp& g) { return g.isSP() || g.isZR(); }
  static constexpr const char* kNotWide = "must be a 64-bit x register";
  static constexpr const char* kReserved = "cannot be sp or xzr";
  static constexpr const char* kPinnedPair = "thread and cache must be distinct x registers other than sp and xzr";
  static int scratch_count(const EmitterConfig& cfg) { return a64_scratch_count(cfg); }
  // [thread, #off]; validate(Isa::kArm64) checked that off is an encodable unsigned offset.
  static Mem thread_field(const Gp& thread, std::int64_t off) {
    return asmjit::arm::ptr(thread, static_cast<std::int32_t>(off));
  }
};

// 64-bit immediate as movz + movk for each further non-zero halfword (the seed's
// `mov x17, #0x5000; movk x17, #0xe66a, lsl #16`). At most four instructions.
Status mov_imm64(a64::Emitter& e, const a64::Gp& dst, std::uint64_t value) {
  bool first = true;
  for (std::uint32_t shift = 0; shift < 64; shift += 16) {
    const std::uint64_t half = (value >> shift) & 0xFFFF;
    if (half == 0) continue;
    if (first) OBJPROF_EMIT(e.movz(dst, asmjit::Imm(half), asmjit::arm::lsl(shift)));
    else OBJPROF_EMIT(e.movk(dst, asmjit::Imm(half), asmjit::arm::lsl(shift)));
    first = false;
  }
  if (first) OBJPROF_EMIT(e.movz(dst, asmjit::Imm(0)));
  return Status::Ok();
}

// arm64's instructions for the shared steps; registers are validated.
class A64Barrier : public detail::BarrierSequence<A64Barrier, A64> {
 private:
  friend BarrierSequence;

  A64Barrier(a64::Emitter& e, const EmitterConfig& cfg, const BarrierDescriptor& desc, const A64BarrierRegs& r)
      : BarrierSequence(e, cfg, desc, r), s0_(r.scratch[0]), s1_(r.scratch[1]), s2_(r.scratch[2]),
        s3_(r.scratch[3]), atomics_(a64_resolve_atomics(cfg.a64_atomics)) {}

  // Owner-thread counter increment (ThreadState's bump(): load, add, store; no atomics).
  Status bump(std::int64_t off) {
    OBJPROF_EMIT(e_.ldr(s0_, thread_field(off)));
    OBJPROF_EMIT(e_.add(s0_, s0_, asmjit::Imm(1)));
    OBJPROF_EMIT(e_.str(s0_, thread_field(off)));
    return Status::Ok();
  }
  Status jump(asmjit::Label l) { OBJPROF_EMIT(e_.b(l)); return Status::Ok(); }
  Status jump_on_hit(asmjit::Label l) { OBJPROF_EMIT(e_.b_eq(l)); return Status::Ok(); }
  Status jump_on_miss(asmjit::Label l) { OBJPROF_EMIT(e_.b_ne(l)); return Status::Ok(); }
  Status load_address(const a64::Gp& dst, std::uint64_t value) { return mov_imm64(e_, dst, value); }

  Status compare_cache_field() {
    OBJPROF_EMIT(e_.ldr(s1_, thread_field(cfg_.fields.cache)));
    OBJPROF_EMIT(e_.cmp(s1_, r_.obj));
    return Status::Ok();
  }
  Status compare_cache_register() { OBJPROF_EMIT(e_.cmp(r_.cache, r_.obj)); return Status::Ok(); }
  Status store_cache_field() { OBJPROF_EMIT(e_.str(r_.obj, thread_field(cfg_.fields.cache))); return Status::Ok(); }

  // s0 = obj - begin; unsigned s0 >= size -> done_ (null and addresses below begin wrap).
  Status range_check() {
    if (cfg_.bounds == BoundsSource::kDescriptor) {
      a64::Gp d;
      if (Status s = desc_base(d); !s) return s;
      OBJPROF_EMIT(e_.ldr(s0_, asmjit::arm::ptr(d, barrier_layout::kBeginOffset)));
      OBJPROF_EMIT(e_.sub(s0_, r_.obj, s0_));
      OBJPROF_EMIT(e_.ldr(s1_, asmjit::arm::ptr(d, barrier_layout::kSizeOffset)));
      OBJPROF_EMIT(e_.cmp(s0_, s1_));
    } else {
      if (Status s = mov_imm64(e_, s0_, desc_.begin); !s) return s;
      OBJPROF_EMIT(e_.sub(s0_, r_.obj, s0_));
      if (desc_.size < 4096) {
        OBJPROF_EMIT(e_.cmp(s0_, asmjit::Imm(desc_.size)));
      } else {
        if (Status s = mov_imm64(e_, s1_, desc_.size); !s) return s;
        OBJPROF_EMIT(e_.cmp(s0_, s1_));
      }
    }
    OBJPROF_EMIT(e_.b_hs(done_));
    return Status::Ok();
  }

  // Sets the offset's bit in the active bitmap.
  Status set_bit() {
    // Byte and bit straight from the offset (s0): the byte is offset >> (log2K + 3), the bit the
    // granule's low three bits, offset bits [log2K, log2K + 3), all in the low word since
    // log2K <= 16. (Shifting to the granule first took one instruction more.)
    const std::uint32_t log2k = desc_.log2_granule;
    a64::Gp d;
    if (Status s = desc_base(d); !s) return s;
    OBJPROF_EMIT(e_.ldr(s1_, asmjit::arm::ptr(d, barrier_layout::kBitmapOffset)));  // active buffer
    OBJPROF_EMIT(e_.add(s1_, s1_, s0_, asmjit::arm::lsr(log2k + 3)));              // byte address
    const a64::GpW bit = s0_.w();
    const a64::GpW tmp = s2_.w();
    OBJPROF_EMIT(e_.ubfx(bit, bit, asmjit::Imm(log2k), asmjit::Imm(3)));
    OBJPROF_EMIT(e_.mov(tmp, asmjit::Imm(1)));
    OBJPROF_EMIT(e_.lsl(bit, tmp, bit));  // bit now holds the mask
    const a64::Mem byte = asmjit::arm::ptr(s1_);
    asmjit::Label marked = done_;
    if (cfg_.mark == MarkMode::kRacy || cfg_.mark == MarkMode::kRacyTestFirst) {
      OBJPROF_EMIT(e_.ldrb(tmp, byte));
      if (cfg_.mark == MarkMode::kRacyTestFirst) {  // no store when the bit is set
        marked = e_.newLabel();
        OBJPROF_EMIT(e_.tst(tmp, bit));
        OBJPROF_EMIT(e_.b_ne(marked));
      }
      OBJPROF_EMIT(e_.orr(tmp, tmp, bit));
      OBJPROF_EMIT(e_.strb(tmp, byte));
    } else {
      if (cfg_.mark == MarkMode::kAtomicTestFirst) {
        marked = e_.newLabel();
        OBJPROF_EMIT(e_.ldrb(tmp, byte));
        OBJPROF_EMIT(e_.tst(tmp, bit));
        OBJPROF_EMIT(e_.b_ne(marked));
      }
      if (atomics_ == A64Atomics::kLse) {
        OBJPROF_EMIT(e_.stsetb(bit, byte));
      } else {
        const asmjit::Label retry = e_.newLabel();
        OBJPROF_EMIT(e_.bind(retry));
        OBJPROF_EMIT(e_.ldxrb(tmp, byte));
        OBJPROF_EMIT(e_.orr(tmp, tmp, bit));
        OBJPROF_EMIT(e_.stxrb(s3_.w(), tmp, byte));
        OBJPROF_EMIT(e_.cbnz(s3_.w(), retry));
      }
    }
    if (marked != done_) OBJPROF_EMIT(e_.bind(marked));
    return Status::Ok();
  }

  a64::Gp s0_, s1_, s2_, s3_;
  A64Atomics atomics_;
};

}  // namespace

Status emit_access_barrier(asmjit::BaseEmitter& e, const EmitterConfig& cfg, const BarrierDescriptor& desc,
                           const A64BarrierRegs& regs) {
  return A64Barrier::checked_emit(e, cfg, desc, regs);
}

Status emit_access_barrier_fast(asmjit::BaseEmitter& e, const EmitterConfig& cfg, const BarrierDescriptor& desc,
                                const A64BarrierRegs& regs, asmjit::Label slow) {
  return A64Barrier::checked_emit_fast(e, cfg, desc, regs, slow);
}

Status emit_access_barrier_slow(asmjit::BaseEmitter& e, const EmitterConfig& cfg, const BarrierDescriptor& desc,
                                const A64BarrierRegs& regs, asmjit::Label slow, asmjit::Label resume) {
  return A64Barrier::checked_emit_slow(e, cfg, desc, regs, slow, resume);
}

// The pinned cache register <-> its word at [thread, #cfg.fields.cache].
Status emit_load_pinned_cache(asmjit::BaseEmitter& e, const EmitterConfig& cfg, const A64BarrierRegs& regs) {
  if (Status s = detail::check_pinned_cache<A64>(e, cfg, regs); !s) return s;
  OBJPROF_EMIT(e.as<a64::Emitter>()->ldr(regs.cache, A64::thread_field(regs.thread, cfg.fields.cache)));
  return Status::Ok();
}

Status emit_store_pinned_cache(asmjit::BaseEmitter& e, const EmitterConfig& cfg, const A64BarrierRegs& regs) {
  if (Status s = detail::check_pinned_cache<A64>(e, cfg, regs); !s) return s;
  OBJPROF_EMIT(e.as<a64::Emitter>()->str(regs.cache, A64::thread_field(regs.thread, cfg.fields.cache)));
  return Status::Ok();
}

}  // namespace objprof::backends
