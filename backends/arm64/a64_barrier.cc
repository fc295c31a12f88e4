// arm64 access barrier emitter. The sequence is in a64_barrier.h; docs/backends.md puts it
// beside seed 001 §2.3's and explains the register choices.
#include "backends/arm64/a64_barrier.h"

#include "backends/emit_util.h"

namespace objprof::backends {

namespace a64 = asmjit::a64;
using detail::RegisterSet;

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

// The emitter must be attached to AArch64 code (Assembler, Builder or Compiler alike).
Status check_emitter(const asmjit::BaseEmitter& e) {
  if (e.arch() != asmjit::Arch::kAArch64)
    return make_error(ErrorCode::kInvalidArgument, "arm64 barrier: the emitter is not attached to AArch64 code");
  return Status::Ok();
}

Status check_regs(const EmitterConfig& cfg, const A64BarrierRegs& r) {
  RegisterSet set;
  auto need = [&](const a64::Gp& g, const char* role) -> Status {
    if (!g.isGpX())
      return make_error(ErrorCode::kInvalidArgument,
                        std::string("arm64 barrier: the ") + role + " register must be a 64-bit x register");
    if (g.isSP() || g.isZR())
      return make_error(ErrorCode::kInvalidArgument, std::string("arm64 barrier: the ") + role + " register cannot be sp or xzr");
    if (!set.add(g.id(), role)) return make_error(ErrorCode::kInvalidArgument, "arm64 barrier: " + set.error());
    return Status::Ok();
  };
  if (Status s = need(r.obj, "object"); !s) return s;
  if (cfg.uses_thread())
    if (Status s = need(r.thread, "thread"); !s) return s;
  if (r.desc.isValid())
    if (Status s = need(r.desc, "descriptor"); !s) return s;
  if (cfg.cache == CacheLocation::kPinnedRegister)
    if (Status s = need(r.cache, "pinned cache"); !s) return s;
  for (int i = 0; i < a64_scratch_count(cfg); ++i)
    if (Status s = need(r.scratch[static_cast<std::size_t>(i)], "scratch"); !s) return s;
  return Status::Ok();
}

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

class A64Barrier {
 public:
  A64Barrier(a64::Emitter& e, const EmitterConfig& cfg, const BarrierDescriptor& desc, const A64BarrierRegs& r)
      : e_(e), cfg_(cfg), desc_(desc), r_(r), s0_(r.scratch[0]), s1_(r.scratch[1]), s2_(r.scratch[2]),
        s3_(r.scratch[3]), atomics_(a64_resolve_atomics(cfg.a64_atomics)) {}

  Status emit() {
    done_ = e_.newLabel();
    hit_ = cfg_.count && cfg_.compares_cache() ? e_.newLabel() : done_;
    if (cfg_.count) {
      if (Status s = bump(cfg_.fields.executed()); !s) return s;
    }
    if (cfg_.range_first) {
      if (Status s = range_check(); !s) return s;
      if (Status s = cache_compare(); !s) return s;
      if (cfg_.compares_cache()) OBJPROF_EMIT(e_.b_eq(hit_));
    } else {
      if (Status s = cache_compare(); !s) return s;
      if (cfg_.compares_cache()) OBJPROF_EMIT(e_.b_eq(hit_));
      if (Status s = range_check(); !s) return s;
    }
    if (Status s = mark(); !s) return s;
    if (hit_ != done_) {
      OBJPROF_EMIT(e_.b(done_));
      OBJPROF_EMIT(e_.bind(hit_));
      if (Status s = bump(cfg_.fields.cache_hits()); !s) return s;
    }
    OBJPROF_EMIT(e_.bind(done_));
    return Status::Ok();
  }

  // Out-of-line form: the cache compare at the site, a hit falls through ...
  Status emit_fast(asmjit::Label slow) {
    if (cfg_.count) {
      if (Status s = bump(cfg_.fields.executed()); !s) return s;
    }
    if (Status s = cache_compare(); !s) return s;
    OBJPROF_EMIT(e_.b_ne(slow));
    if (cfg_.count) {
      if (Status s = bump(cfg_.fields.cache_hits()); !s) return s;
    }
    return Status::Ok();
  }

  // ... and the miss path elsewhere, returning to `resume`.
  Status emit_slow(asmjit::Label slow, asmjit::Label resume) {
    done_ = resume;
    OBJPROF_EMIT(e_.bind(slow));
    if (Status s = range_check(); !s) return s;
    if (Status s = mark(); !s) return s;
    OBJPROF_EMIT(e_.b(resume));
    return Status::Ok();
  }

 private:
  // [thread, #off]; validate(Isa::kArm64) checked that off is an encodable unsigned offset.
  a64::Mem thread_field(std::int64_t off) const { return asmjit::arm::ptr(r_.thread, static_cast<std::int32_t>(off)); }

  // Owner-thread counter increment (ThreadState's bump(): load, add, store; no atomics).
  Status bump(std::int64_t off) {
    OBJPROF_EMIT(e_.ldr(s0_, thread_field(off)));
    OBJPROF_EMIT(e_.add(s0_, s0_, asmjit::Imm(1)));
    OBJPROF_EMIT(e_.str(s0_, thread_field(off)));
    return Status::Ok();
  }

  // The descriptor's base register: the given one, or s2 loaded with &desc. s2 is not written
  // between the range check and the bitmap load, so &desc is materialized at most once.
  Status desc_base(a64::Gp& base) {
    if (r_.desc.isValid()) {
      base = r_.desc;
      return Status::Ok();
    }
    if (!desc_in_s2_) {
      if (Status s = mov_imm64(e_, s2_, reinterpret_cast<std::uint64_t>(&desc_)); !s) return s;
    }
    desc_in_s2_ = true;
    base = s2_;
    return Status::Ok();
  }

  // Compares obj with the cache (the caller branches on equal). A hit implies the object is in
  // range (the cache holds 0 or an in-range object), so this may come before or after the
  // range check.
  Status cache_compare() {
    if (cfg_.store_only) return Status::Ok();  // stores on the marking path, never compares
    switch (cfg_.cache) {
      case CacheLocation::kNone: return Status::Ok();
      case CacheLocation::kThreadField:
        OBJPROF_EMIT(e_.ldr(s1_, thread_field(cfg_.fields.cache)));
        OBJPROF_EMIT(e_.cmp(s1_, r_.obj));
        break;
      case CacheLocation::kPinnedRegister: OBJPROF_EMIT(e_.cmp(r_.cache, r_.obj)); break;
    }
    return Status::Ok();
  }

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

  Status mark() {
    switch (cfg_.cache) {
      case CacheLocation::kNone: break;
      case CacheLocation::kThreadField: OBJPROF_EMIT(e_.str(r_.obj, thread_field(cfg_.fields.cache))); break;
      case CacheLocation::kPinnedRegister: OBJPROF_EMIT(e_.mov(r_.cache, r_.obj)); break;
    }
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
    if (cfg_.count) {
      if (Status s = bump(cfg_.fields.marks()); !s) return s;
    }
    return Status::Ok();
  }

  a64::Emitter& e_;
  const EmitterConfig& cfg_;
  const BarrierDescriptor& desc_;
  const A64BarrierRegs& r_;
  a64::Gp s0_, s1_, s2_, s3_;
  A64Atomics atomics_;
  asmjit::Label done_, hit_;
  bool desc_in_s2_ = false;
};

}  // namespace

namespace {
Status check_all(const asmjit::BaseEmitter& e, const EmitterConfig& cfg, const BarrierDescriptor& desc,
                 const A64BarrierRegs& regs) {
  if (Status s = check_emitter(e); !s) return s;
  if (Status s = cfg.validate(Isa::kArm64); !s) return s;
  if (Status s = check_regs(cfg, regs); !s) return s;
  if (desc.log2_granule > 16)
    return make_error(ErrorCode::kInvalidArgument,
                      "arm64 barrier: log2 granule " + std::to_string(desc.log2_granule) + " is out of range");
  return Status::Ok();
}

}  // namespace

Status emit_access_barrier(asmjit::BaseEmitter& e, const EmitterConfig& cfg, const BarrierDescriptor& desc,
                           const A64BarrierRegs& regs) {
  if (Status s = check_all(e, cfg, desc, regs); !s) return s;
  return A64Barrier(*e.as<a64::Emitter>(), cfg, desc, regs).emit();
}

Status emit_access_barrier_fast(asmjit::BaseEmitter& e, const EmitterConfig& cfg, const BarrierDescriptor& desc,
                                const A64BarrierRegs& regs, asmjit::Label slow) {
  if (Status s = check_all(e, cfg, desc, regs); !s) return s;
  if (Status s = cfg.validate_out_of_line("arm64"); !s) return s;
  return A64Barrier(*e.as<a64::Emitter>(), cfg, desc, regs).emit_fast(slow);
}

Status emit_access_barrier_slow(asmjit::BaseEmitter& e, const EmitterConfig& cfg, const BarrierDescriptor& desc,
                                const A64BarrierRegs& regs, asmjit::Label slow, asmjit::Label resume) {
  if (Status s = check_all(e, cfg, desc, regs); !s) return s;
  if (Status s = cfg.validate_out_of_line("arm64"); !s) return s;
  return A64Barrier(*e.as<a64::Emitter>(), cfg, desc, regs).emit_slow(slow, resume);
}

namespace {
// The pinned cache's word: [thread, #cfg.fields.cache].
Result<a64::Mem> pinned_cache_field(const asmjit::BaseEmitter& e, const EmitterConfig& cfg, const A64BarrierRegs& regs) {
  if (Status s = check_emitter(e); !s) return s.error();
  if (Status s = cfg.validate(Isa::kArm64); !s) return s.error();
  if (!regs.thread.isGpX() || !regs.cache.isGpX() || regs.thread.id() == regs.cache.id() || regs.thread.isSP() ||
      regs.cache.isSP() || regs.thread.isZR() || regs.cache.isZR())
    return make_error(ErrorCode::kInvalidArgument,
                      "arm64 pinned cache: thread and cache must be distinct x registers other than sp and xzr");
  return asmjit::arm::ptr(regs.thread, static_cast<std::int32_t>(cfg.fields.cache));
}
}  // namespace

Status emit_load_pinned_cache(asmjit::BaseEmitter& base, const EmitterConfig& cfg, const A64BarrierRegs& regs) {
  Result<a64::Mem> field = pinned_cache_field(base, cfg, regs);
  if (!field.ok()) return field.error();
  OBJPROF_EMIT(base.as<a64::Emitter>()->ldr(regs.cache, *field));
  return Status::Ok();
}

Status emit_store_pinned_cache(asmjit::BaseEmitter& base, const EmitterConfig& cfg, const A64BarrierRegs& regs) {
  Result<a64::Mem> field = pinned_cache_field(base, cfg, regs);
  if (!field.ok()) return field.error();
  OBJPROF_EMIT(base.as<a64::Emitter>()->str(regs.cache, *field));
  return Status::Ok();
}

}  // namespace objprof::backends
