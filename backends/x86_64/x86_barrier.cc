// x86_64 access barrier emitter. The sequence is in x86_barrier.h; docs/backends.md explains
// the register choices.
#include "backends/x86_64/x86_barrier.h"

#include "backends/emit_util.h"

#include <limits>

namespace objprof::backends {

namespace x86 = asmjit::x86;
using detail::RegisterSet;

X86BarrierRegs X86BarrierRegs::sysv(x86::Gp obj) noexcept {
  X86BarrierRegs r;
  r.obj = obj;
  r.thread = x86::r15;
  r.cache = x86::r14;
  r.scratch = {x86::r10, x86::r11, x86::rax};
  return r;
}

namespace {

bool fits_i32(std::int64_t v) {
  return v >= std::numeric_limits<std::int32_t>::min() && v <= std::numeric_limits<std::int32_t>::max();
}

// The emitter must be attached to x86_64 code (Assembler, Builder or Compiler alike).
Status check_emitter(const asmjit::BaseEmitter& e) {
  if (e.arch() != asmjit::Arch::kX64)
    return make_error(ErrorCode::kInvalidArgument, "x86_64 barrier: the emitter is not attached to x86_64 code");
  return Status::Ok();
}

Status check_regs(const EmitterConfig& cfg, const X86BarrierRegs& r) {
  RegisterSet set;
  auto need = [&](const x86::Gp& g, const char* role) -> Status {
    if (!g.isGpq())
      return make_error(ErrorCode::kInvalidArgument,
                        std::string("x86_64 barrier: the ") + role + " register must be a 64-bit general-purpose register");
    if (g.id() == x86::Gp::kIdSp)
      return make_error(ErrorCode::kInvalidArgument, std::string("x86_64 barrier: the ") + role + " register cannot be rsp");
    if (!set.add(g.id(), role)) return make_error(ErrorCode::kInvalidArgument, "x86_64 barrier: " + set.error());
    return Status::Ok();
  };
  if (Status s = need(r.obj, "object"); !s) return s;
  if (cfg.uses_thread())
    if (Status s = need(r.thread, "thread"); !s) return s;
  if (r.desc.isValid())
    if (Status s = need(r.desc, "descriptor"); !s) return s;
  if (cfg.cache == CacheLocation::kPinnedRegister)
    if (Status s = need(r.cache, "pinned cache"); !s) return s;
  for (const x86::Gp& g : r.scratch)
    if (Status s = need(g, "scratch"); !s) return s;
  return Status::Ok();
}

// The emitter proper; registers are validated.
class X86Barrier {
 public:
  X86Barrier(x86::Emitter& e, const EmitterConfig& cfg, const BarrierDescriptor& desc, const X86BarrierRegs& r)
      : e_(e), cfg_(cfg), desc_(desc), r_(r), t0_(r.scratch[0]), t1_(r.scratch[1]), t2_(r.scratch[2]) {}

  Status emit() {
    done_ = e_.newLabel();
    hit_ = cfg_.count && cfg_.compares_cache() ? e_.newLabel() : done_;
    if (cfg_.count) OBJPROF_EMIT(e_.inc(thread_field(cfg_.fields.executed())));
    if (cfg_.range_first) {
      if (Status s = range_check(); !s) return s;
      if (Status s = cache_compare(); !s) return s;
      if (cfg_.compares_cache()) OBJPROF_EMIT(e_.je(hit_));
    } else {
      if (Status s = cache_compare(); !s) return s;
      if (cfg_.compares_cache()) OBJPROF_EMIT(e_.je(hit_));
      if (Status s = range_check(); !s) return s;
    }
    if (Status s = mark(); !s) return s;
    if (hit_ != done_) {
      OBJPROF_EMIT(e_.jmp(done_));
      OBJPROF_EMIT(e_.bind(hit_));
      OBJPROF_EMIT(e_.inc(thread_field(cfg_.fields.cache_hits())));
    }
    OBJPROF_EMIT(e_.bind(done_));
    return Status::Ok();
  }

  // Out-of-line form: the cache compare at the site, a hit falls through ...
  Status emit_fast(asmjit::Label slow) {
    if (cfg_.count) OBJPROF_EMIT(e_.inc(thread_field(cfg_.fields.executed())));
    if (Status s = cache_compare(); !s) return s;
    OBJPROF_EMIT(e_.jne(slow));
    if (cfg_.count) OBJPROF_EMIT(e_.inc(thread_field(cfg_.fields.cache_hits())));
    return Status::Ok();
  }

  // ... and the miss path elsewhere, returning to `resume`.
  Status emit_slow(asmjit::Label slow, asmjit::Label resume) {
    done_ = resume;
    OBJPROF_EMIT(e_.bind(slow));
    if (Status s = range_check(); !s) return s;
    if (Status s = mark(); !s) return s;
    OBJPROF_EMIT(e_.jmp(resume));
    return Status::Ok();
  }

 private:
  // [thread + off]; validate(Isa::kX86_64) checked that off fits the 32-bit displacement.
  x86::Mem thread_field(std::int64_t off) const { return x86::qword_ptr(r_.thread, static_cast<std::int32_t>(off)); }

  // The descriptor's base register: the given one, or t2 loaded with &desc. t2 is not written
  // between the range check and the bitmap load, so &desc is materialized at most once.
  Status desc_base(x86::Gp& base) {
    if (r_.desc.isValid()) {
      base = r_.desc;
      return Status::Ok();
    }
    if (!desc_in_t2_) OBJPROF_EMIT(e_.mov(t2_, asmjit::Imm(reinterpret_cast<std::uint64_t>(&desc_))));
    desc_in_t2_ = true;
    base = t2_;
    return Status::Ok();
  }

  // Compares obj with the cache (the caller branches on equal). A hit implies the object is in
  // range (the cache holds 0 or an in-range object), so this may come before or after the
  // range check.
  Status cache_compare() {
    if (cfg_.store_only) return Status::Ok();  // stores on the marking path, never compares
    switch (cfg_.cache) {
      case CacheLocation::kNone: return Status::Ok();
      case CacheLocation::kThreadField: OBJPROF_EMIT(e_.cmp(r_.obj, thread_field(cfg_.fields.cache))); break;
      case CacheLocation::kPinnedRegister: OBJPROF_EMIT(e_.cmp(r_.obj, r_.cache)); break;
    }
    return Status::Ok();
  }

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

  // Store the new cache, then set bit (t0 >> log2K) of the active bitmap.
  Status mark() {
    switch (cfg_.cache) {
      case CacheLocation::kNone: break;
      case CacheLocation::kThreadField: OBJPROF_EMIT(e_.mov(thread_field(cfg_.fields.cache), r_.obj)); break;
      case CacheLocation::kPinnedRegister: OBJPROF_EMIT(e_.mov(r_.cache, r_.obj)); break;
    }
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
    if (cfg_.count) OBJPROF_EMIT(e_.inc(thread_field(cfg_.fields.marks())));
    return Status::Ok();
  }

  x86::Emitter& e_;
  const EmitterConfig& cfg_;
  const BarrierDescriptor& desc_;
  const X86BarrierRegs& r_;
  x86::Gp t0_, t1_, t2_;
  asmjit::Label done_, hit_;
  bool desc_in_t2_ = false;
};

}  // namespace

namespace {
Status check_all(const asmjit::BaseEmitter& e, const EmitterConfig& cfg, const BarrierDescriptor& desc,
                 const X86BarrierRegs& regs) {
  if (Status s = check_emitter(e); !s) return s;
  if (Status s = cfg.validate(Isa::kX86_64); !s) return s;
  if (Status s = check_regs(cfg, regs); !s) return s;
  if (desc.log2_granule > 16)
    return make_error(ErrorCode::kInvalidArgument,
                      "x86_64 barrier: log2 granule " + std::to_string(desc.log2_granule) + " is out of range");
  return Status::Ok();
}

}  // namespace

Status emit_access_barrier(asmjit::BaseEmitter& e, const EmitterConfig& cfg, const BarrierDescriptor& desc,
                           const X86BarrierRegs& regs) {
  if (Status s = check_all(e, cfg, desc, regs); !s) return s;
  return X86Barrier(*e.as<x86::Emitter>(), cfg, desc, regs).emit();
}

Status emit_access_barrier_fast(asmjit::BaseEmitter& e, const EmitterConfig& cfg, const BarrierDescriptor& desc,
                                const X86BarrierRegs& regs, asmjit::Label slow) {
  if (Status s = check_all(e, cfg, desc, regs); !s) return s;
  if (Status s = cfg.validate_out_of_line("x86_64"); !s) return s;
  return X86Barrier(*e.as<x86::Emitter>(), cfg, desc, regs).emit_fast(slow);
}

Status emit_access_barrier_slow(asmjit::BaseEmitter& e, const EmitterConfig& cfg, const BarrierDescriptor& desc,
                                const X86BarrierRegs& regs, asmjit::Label slow, asmjit::Label resume) {
  if (Status s = check_all(e, cfg, desc, regs); !s) return s;
  if (Status s = cfg.validate_out_of_line("x86_64"); !s) return s;
  return X86Barrier(*e.as<x86::Emitter>(), cfg, desc, regs).emit_slow(slow, resume);
}

namespace {
// The pinned cache's word: [thread + cfg.fields.cache].
Result<x86::Mem> pinned_cache_field(const asmjit::BaseEmitter& e, const EmitterConfig& cfg, const X86BarrierRegs& regs) {
  if (Status s = check_emitter(e); !s) return s.error();
  if (Status s = cfg.validate(Isa::kX86_64); !s) return s.error();
  if (!regs.thread.isGpq() || !regs.cache.isGpq() || regs.thread.id() == regs.cache.id() ||
      regs.thread.id() == x86::Gp::kIdSp || regs.cache.id() == x86::Gp::kIdSp)
    return make_error(ErrorCode::kInvalidArgument,
                      "x86_64 pinned cache: thread and cache must be distinct 64-bit registers other than rsp");
  return x86::qword_ptr(regs.thread, static_cast<std::int32_t>(cfg.fields.cache));
}
}  // namespace

Status emit_load_pinned_cache(asmjit::BaseEmitter& base, const EmitterConfig& cfg, const X86BarrierRegs& regs) {
  Result<x86::Mem> field = pinned_cache_field(base, cfg, regs);
  if (!field.ok()) return field.error();
  OBJPROF_EMIT(base.as<x86::Emitter>()->mov(regs.cache, *field));
  return Status::Ok();
}

Status emit_store_pinned_cache(asmjit::BaseEmitter& base, const EmitterConfig& cfg, const X86BarrierRegs& regs) {
  Result<x86::Mem> field = pinned_cache_field(base, cfg, regs);
  if (!field.ok()) return field.error();
  OBJPROF_EMIT(base.as<x86::Emitter>()->mov(*field, regs.cache));
  return Status::Ok();
}

}  // namespace objprof::backends
