// The part of the emitted access barrier that is the same on every ISA, private to the
// emitters' sources: the order of its steps for each EmitterConfig variant (counter bumps,
// cache compare, range check, mark, and the out-of-line split into a fast and a slow half),
// where the descriptor's address comes from, and the checks every entry point makes before it
// emits anything. A backend derives from BarrierSequence and supplies only its instructions,
// so both ISAs take the same steps in the same order and cannot drift apart; the sequences
// that come out are in x86_barrier.h and a64_barrier.h.
#pragma once

#include "backends/emit_config.h"
#include "backends/emit_util.h"

#include <asmjit/core.h>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>

namespace objprof::backends::detail {

// What a backend tells the shared code about its ISA (X86 in x86_barrier.cc, A64 in
// a64_barrier.cc): asmjit's emitter, register and memory types, the backend's register set,
// and the rule every barrier register follows (a 64-bit general-purpose register that is not
// the stack pointer, nor arm64's zero register), with the words its errors use.
template <typename T>
concept BarrierIsa = requires(const typename T::Gp& g, const EmitterConfig& cfg, std::int64_t off) {
  typename T::Emitter;
  typename T::Regs;
  { T::kIsa } -> std::convertible_to<Isa>;
  { T::kArch } -> std::convertible_to<asmjit::Arch>;
  { T::kArchName } -> std::convertible_to<const char*>;  // the code the emitter must be attached to
  { T::is_wide(g) } -> std::same_as<bool>;
  { T::is_reserved(g) } -> std::same_as<bool>;
  { T::kNotWide } -> std::convertible_to<const char*>;   // "the <role> register " + kNotWide
  { T::kReserved } -> std::convertible_to<const char*>;  // "the <role> register " + kReserved
  { T::kPinnedPair } -> std::convertible_to<const char*>;
  { T::scratch_count(cfg) } -> std::same_as<int>;
  { T::thread_field(g, off) } -> std::same_as<typename T::Mem>;  // [thread + off]
};

template <BarrierIsa T>
std::string barrier_error_prefix() {
  return std::string(isa_name(T::kIsa)) + " barrier: ";
}

// The emitter must be attached to the ISA's code (Assembler, Builder or Compiler alike).
template <BarrierIsa T>
Status check_emitter(const asmjit::BaseEmitter& e) {
  if (e.arch() != T::kArch)
    return make_error(ErrorCode::kInvalidArgument,
                      barrier_error_prefix<T>() + "the emitter is not attached to " + T::kArchName + " code");
  return Status::Ok();
}

// One register the barrier uses: of the ISA's kind, and aliasing none added to `set` before.
template <BarrierIsa T>
Status check_register(RegisterSet& set, const typename T::Gp& g, const char* role) {
  if (!T::is_wide(g))
    return make_error(ErrorCode::kInvalidArgument,
                      barrier_error_prefix<T>() + "the " + role + " register " + T::kNotWide);
  if (T::is_reserved(g))
    return make_error(ErrorCode::kInvalidArgument,
                      barrier_error_prefix<T>() + "the " + role + " register " + T::kReserved);
  if (!set.add(g.id(), role)) return make_error(ErrorCode::kInvalidArgument, barrier_error_prefix<T>() + set.error());
  return Status::Ok();
}

// The registers the variant `cfg` reads and writes; the others in `r` are not looked at.
template <BarrierIsa T>
Status check_registers(const EmitterConfig& cfg, const typename T::Regs& r) {
  RegisterSet set;
  if (Status s = check_register<T>(set, r.obj, "object"); !s) return s;
  if (cfg.uses_thread())
    if (Status s = check_register<T>(set, r.thread, "thread"); !s) return s;
  if (r.desc.isValid())
    if (Status s = check_register<T>(set, r.desc, "descriptor"); !s) return s;
  if (cfg.cache == CacheLocation::kPinnedRegister)
    if (Status s = check_register<T>(set, r.cache, "pinned cache"); !s) return s;
  for (int i = 0; i < T::scratch_count(cfg); ++i)
    if (Status s = check_register<T>(set, r.scratch[static_cast<std::size_t>(i)], "scratch"); !s) return s;
  return Status::Ok();
}

// Everything an entry point checks before emitting; the out-of-line halves also need a cache
// compared first.
template <BarrierIsa T>
Status check_barrier(const asmjit::BaseEmitter& e, const EmitterConfig& cfg, const BarrierDescriptor& desc,
                     const typename T::Regs& regs, bool out_of_line) {
  if (Status s = check_emitter<T>(e); !s) return s;
  if (Status s = cfg.validate(T::kIsa); !s) return s;
  if (Status s = check_registers<T>(cfg, regs); !s) return s;
  if (desc.log2_granule > 16)
    return make_error(ErrorCode::kInvalidArgument, barrier_error_prefix<T>() + "log2 granule " +
                                                       std::to_string(desc.log2_granule) + " is out of range");
  if (out_of_line) return cfg.validate_out_of_line(isa_name(T::kIsa));
  return Status::Ok();
}

// The pinned cache's load and store need only the thread and cache registers, distinct.
template <BarrierIsa T>
Status check_pinned_cache(const asmjit::BaseEmitter& e, const EmitterConfig& cfg, const typename T::Regs& regs) {
  if (Status s = check_emitter<T>(e); !s) return s;
  if (Status s = cfg.validate(T::kIsa); !s) return s;
  const auto usable = [](const typename T::Gp& g) { return T::is_wide(g) && !T::is_reserved(g); };
  if (!usable(regs.thread) || !usable(regs.cache) || regs.thread.id() == regs.cache.id())
    return make_error(ErrorCode::kInvalidArgument, std::string(isa_name(T::kIsa)) + " pinned cache: " + T::kPinnedPair);
  return Status::Ok();
}

// The steps of one barrier. Backend derives from BarrierSequence<Backend, T> and supplies
// the instructions (private, with BarrierSequence a friend):
//   bump(off)                       the owner-thread counter at [thread + off] += 1
//   compare_cache_field()           obj with the cache word at [thread + cfg.fields.cache],
//   compare_cache_register()        or with the pinned cache register: equal is a hit
//   jump_on_hit(l), jump_on_miss(l), jump(l)
//   store_cache_field()             obj into the cache word (a pinned cache is a mov)
//   range_check()                   offset = obj - begin into the first scratch register;
//                                   unsigned offset >= size jumps to done_
//   set_bit()                       sets the offset's bit in the active bitmap (the mark mode's
//                                   form, test-first included); the cache is stored already
//   load_address(dst, value)        dst = value, a 64-bit constant
template <typename Backend, BarrierIsa T>
class BarrierSequence {
 public:
  using Regs = typename T::Regs;

  // The entry points: everything checked, then the whole barrier or one half of the
  // out-of-line form (x86_barrier.h says how a JIT places them).
  static Status checked_emit(asmjit::BaseEmitter& e, const EmitterConfig& cfg, const BarrierDescriptor& desc,
                             const Regs& regs) {
    if (Status s = check_barrier<T>(e, cfg, desc, regs, false); !s) return s;
    return Backend(*e.as<typename T::Emitter>(), cfg, desc, regs).emit();
  }
  static Status checked_emit_fast(asmjit::BaseEmitter& e, const EmitterConfig& cfg, const BarrierDescriptor& desc,
                                  const Regs& regs, asmjit::Label slow) {
    if (Status s = check_barrier<T>(e, cfg, desc, regs, true); !s) return s;
    return Backend(*e.as<typename T::Emitter>(), cfg, desc, regs).emit_fast(slow);
  }
  static Status checked_emit_slow(asmjit::BaseEmitter& e, const EmitterConfig& cfg, const BarrierDescriptor& desc,
                                  const Regs& regs, asmjit::Label slow, asmjit::Label resume) {
    if (Status s = check_barrier<T>(e, cfg, desc, regs, true); !s) return s;
    return Backend(*e.as<typename T::Emitter>(), cfg, desc, regs).emit_slow(slow, resume);
  }

 protected:
  BarrierSequence(typename T::Emitter& e, const EmitterConfig& cfg, const BarrierDescriptor& desc, const Regs& r)
      : e_(e), cfg_(cfg), desc_(desc), r_(r) {}

  // Cache compare first (a hit is one compare and one taken branch), or the seed's order with
  // range_first; a counted hit jumps past the mark to bump cache_hits.
  Status emit() {
    done_ = e_.newLabel();
    hit_ = cfg_.count && cfg_.compares_cache() ? e_.newLabel() : done_;
    if (cfg_.count)
      if (Status s = self().bump(cfg_.fields.executed()); !s) return s;
    if (cfg_.range_first) {
      if (Status s = self().range_check(); !s) return s;
      if (Status s = cache_compare(); !s) return s;
      if (cfg_.compares_cache())
        if (Status s = self().jump_on_hit(hit_); !s) return s;
    } else {
      if (Status s = cache_compare(); !s) return s;
      if (cfg_.compares_cache())
        if (Status s = self().jump_on_hit(hit_); !s) return s;
      if (Status s = self().range_check(); !s) return s;
    }
    if (Status s = mark(); !s) return s;
    if (hit_ != done_) {
      if (Status s = self().jump(done_); !s) return s;
      OBJPROF_EMIT(e_.bind(hit_));
      if (Status s = self().bump(cfg_.fields.cache_hits()); !s) return s;
    }
    OBJPROF_EMIT(e_.bind(done_));
    return Status::Ok();
  }

  // Out-of-line form: the cache compare at the site, a hit falls through ...
  Status emit_fast(asmjit::Label slow) {
    if (cfg_.count)
      if (Status s = self().bump(cfg_.fields.executed()); !s) return s;
    if (Status s = cache_compare(); !s) return s;
    if (Status s = self().jump_on_miss(slow); !s) return s;
    if (cfg_.count)
      if (Status s = self().bump(cfg_.fields.cache_hits()); !s) return s;
    return Status::Ok();
  }

  // ... and the miss path elsewhere, returning to `resume`.
  Status emit_slow(asmjit::Label slow, asmjit::Label resume) {
    done_ = resume;
    OBJPROF_EMIT(e_.bind(slow));
    if (Status s = self().range_check(); !s) return s;
    if (Status s = mark(); !s) return s;
    return self().jump(resume);
  }

  typename T::Mem thread_field(std::int64_t off) const { return T::thread_field(r_.thread, off); }

  // The descriptor's base register: the given one, or the third scratch register loaded with
  // &desc. Nothing writes that register between the range check and the bitmap load, so &desc
  // is materialized at most once.
  Status desc_base(typename T::Gp& base) {
    if (r_.desc.isValid()) {
      base = r_.desc;
      return Status::Ok();
    }
    if (!desc_loaded_)
      if (Status s = self().load_address(r_.scratch[2], reinterpret_cast<std::uint64_t>(&desc_)); !s) return s;
    desc_loaded_ = true;
    base = r_.scratch[2];
    return Status::Ok();
  }

  typename T::Emitter& e_;
  const EmitterConfig& cfg_;
  const BarrierDescriptor& desc_;
  const Regs& r_;
  asmjit::Label done_, hit_;

 private:
  Backend& self() { return static_cast<Backend&>(*this); }

  // Compares obj with the cache (the caller branches on a hit). A hit implies the object is in
  // range (the cache holds 0 or an in-range object), so this may come before or after the
  // range check.
  Status cache_compare() {
    if (cfg_.store_only) return Status::Ok();  // stores on the marking path, never compares
    switch (cfg_.cache) {
      case CacheLocation::kNone: return Status::Ok();
      case CacheLocation::kThreadField: return self().compare_cache_field();
      case CacheLocation::kPinnedRegister: return self().compare_cache_register();
    }
    return Status::Ok();
  }

  // Stores the new cache, then sets the object's bit.
  Status mark() {
    switch (cfg_.cache) {
      case CacheLocation::kNone: break;
      case CacheLocation::kThreadField:
        if (Status s = self().store_cache_field(); !s) return s;
        break;
      case CacheLocation::kPinnedRegister: OBJPROF_EMIT(e_.mov(r_.cache, r_.obj)); break;
    }
    if (Status s = self().set_bit(); !s) return s;
    if (cfg_.count) return self().bump(cfg_.fields.marks());
    return Status::Ok();
  }

  bool desc_loaded_ = false;
};

}  // namespace objprof::backends::detail
