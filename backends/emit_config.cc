// Names, parsing and the variant list of EmitterConfig; the layout self-check.
#include "backends/emit_config.h"

#include <array>
#include <charconv>
#include <limits>

namespace objprof::backends {

const char* cache_location_name(CacheLocation c) noexcept {
  switch (c) {
    case CacheLocation::kNone: return "none";
    case CacheLocation::kThreadField: return "field";
    case CacheLocation::kPinnedRegister: return "pinned";
  }
  return "?";
}

const char* bounds_source_name(BoundsSource b) noexcept {
  switch (b) {
    case BoundsSource::kImmediate: return "imm";
    case BoundsSource::kDescriptor: return "desc";
  }
  return "?";
}

const char* a64_atomics_name(A64Atomics a) noexcept {
  switch (a) {
    case A64Atomics::kAuto: return "auto";
    case A64Atomics::kLse: return "lse";
    case A64Atomics::kExclusive: return "exclusive";
  }
  return "?";
}

const char* isa_name(Isa isa) noexcept {
  switch (isa) {
    case Isa::kX86_64: return "x86_64";
    case Isa::kArm64: return "arm64";
  }
  return "?";
}

EmitterConfig EmitterConfig::from(const BarrierConfig& c, CacheLocation where) {
  EmitterConfig e;
  e.cache = c.cache ? where : CacheLocation::kNone;
  e.mark = c.mark;
  e.count = c.count;
  return e;
}

BarrierConfig EmitterConfig::barrier_config() const {
  BarrierConfig c;
  c.cache = uses_cache();
  c.mark = mark;
  c.count = count;
  return c;
}

Status EmitterConfig::validate() const {
  if (mark == MarkMode::kBuffered)
    return make_error(ErrorCode::kUnsupported,
                      "barrier variant " + name() +
                          ": the emitters do not emit buffered marks (the C++ barrier does); use racy, "
                          "racy-test-first, atomic or atomic-test-first");
  if (range_first && count)
    return make_error(ErrorCode::kInvalidArgument,
                      "barrier variant " + name() +
                          ": the range-first order cannot count like the C++ barrier (null with an empty cache is a "
                          "hit there); drop range-first or count");
  if (store_only && (cache == CacheLocation::kNone || range_first))
    return make_error(ErrorCode::kInvalidArgument,
                      "barrier variant " + name() +
                          ": store-only needs a cache and has no compare to order (drop store-only, or range-first)");
  for (auto [what, off] : {std::pair{"cache", fields.cache}, std::pair{"counters", fields.counters}})
    if (off % 8 != 0)
      return make_error(ErrorCode::kInvalidArgument, "barrier variant " + name() + ": the " + what + " offset " +
                                                         std::to_string(off) +
                                                         " is not a multiple of 8 (the barrier reads it as an aligned 64-bit word)");
  return Status::Ok();
}

Status EmitterConfig::validate(Isa isa) const {
  if (Status s = validate(); !s) return s;
  // Each field is one load/store [thread + off]: the cache word, and the three counter words
  // from `counters` to `counters + 16` (`span`).
  const std::int64_t lo = isa == Isa::kArm64 ? 0 : std::numeric_limits<std::int32_t>::min();
  const std::int64_t hi = isa == Isa::kArm64 ? 32760 : std::numeric_limits<std::int32_t>::max();
  auto encodable = [&](const char* what, std::int64_t off, std::int64_t span) -> Status {
    if (off >= lo && off <= hi - span) return Status::Ok();
    return make_error(ErrorCode::kInvalidArgument,
                      std::string(isa_name(isa)) + " barrier " + name() + ": the " + what + " offset " +
                          std::to_string(off) + " cannot be encoded: " +
                          (isa == Isa::kArm64 ? "ldr/str xN, [base, #imm] take an unsigned offset, a multiple of 8 up to 32760"
                                              : "x86_64 addresses take a signed 32-bit displacement") +
                          (span != 0 ? " (for each counter, up to offset + " + std::to_string(span) + ")" : ""));
  };
  if (Status s = encodable("cache", fields.cache, 0); !s) return s;
  return encodable("counters", fields.counters, static_cast<std::int64_t>(counters_layout::kMarks));
}

Status EmitterConfig::validate_out_of_line(const char* arch) const {
  if (!compares_cache() || range_first)
    return make_error(ErrorCode::kInvalidArgument,
                      std::string(arch) + " barrier " + name() + ": the out-of-line form needs a cache compared first");
  return Status::Ok();
}

std::string EmitterConfig::name() const {
  std::string s = cache_location_name(cache);
  s += '/';
  s += mark_mode_name(mark);
  s += '/';
  s += bounds_source_name(bounds);
  if (count) s += "/count";
  if (range_first) s += "/range-first";
  if (store_only) s += "/store-only";
  if (a64_atomics != A64Atomics::kAuto) {
    s += '/';
    s += a64_atomics_name(a64_atomics);
  }
  const ThreadFields thread_state;
  if (fields.cache != thread_state.cache) s += "/cache@" + std::to_string(fields.cache);
  if (fields.counters != thread_state.counters) s += "/counters@" + std::to_string(fields.counters);
  return s;
}

Result<EmitterConfig> parse_emitter_config(std::string_view text) {
  EmitterConfig cfg;
  std::array<std::string_view, 10> parts{};
  std::size_t n = 0;
  for (std::size_t start = 0; start <= text.size();) {
    const std::size_t slash = text.find('/', start);
    const std::size_t end = slash == std::string_view::npos ? text.size() : slash;
    if (n == parts.size())
      return make_error(ErrorCode::kParse, "barrier variant '" + std::string(text) + "' has too many parts");
    parts[n++] = text.substr(start, end - start);
    start = end + 1;
  }
  auto bad = [&](std::string_view what, std::string_view part) -> Error {
    return make_error(ErrorCode::kParse, "barrier variant '" + std::string(text) + "': " + std::string(what) + " '" +
                                             std::string(part) + "'");
  };
  if (n < 3) return make_error(ErrorCode::kParse, "barrier variant '" + std::string(text) +
                                                      "' must be cache/mark/bounds, e.g. field/racy/desc");
  if (parts[0] == "none") cfg.cache = CacheLocation::kNone;
  else if (parts[0] == "field") cfg.cache = CacheLocation::kThreadField;
  else if (parts[0] == "pinned") cfg.cache = CacheLocation::kPinnedRegister;
  else return bad("cache must be none, field or pinned, not", parts[0]);
  if (parts[1] == "racy") cfg.mark = MarkMode::kRacy;
  else if (parts[1] == "racy-test-first") cfg.mark = MarkMode::kRacyTestFirst;
  else if (parts[1] == "atomic") cfg.mark = MarkMode::kAtomic;
  else if (parts[1] == "atomic-test-first") cfg.mark = MarkMode::kAtomicTestFirst;
  else return bad("mark must be racy, racy-test-first, atomic or atomic-test-first, not", parts[1]);
  if (parts[2] == "imm") cfg.bounds = BoundsSource::kImmediate;
  else if (parts[2] == "desc") cfg.bounds = BoundsSource::kDescriptor;
  else return bad("bounds must be imm or desc, not", parts[2]);
  for (std::size_t i = 3; i < n; ++i) {
    if (parts[i] == "count") cfg.count = true;
    else if (parts[i] == "range-first") cfg.range_first = true;
    else if (parts[i] == "store-only") cfg.store_only = true;
    else if (parts[i] == "lse") cfg.a64_atomics = A64Atomics::kLse;
    else if (parts[i] == "exclusive") cfg.a64_atomics = A64Atomics::kExclusive;
    else if (parts[i].starts_with("cache@") || parts[i].starts_with("counters@")) {
      const std::string_view digits = parts[i].substr(parts[i].find('@') + 1);
      std::int64_t off = 0;
      const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), off);
      if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size())
        return bad("offset must be a decimal number, not", parts[i]);
      (parts[i].starts_with("cache@") ? cfg.fields.cache : cfg.fields.counters) = off;
    } else {
      return bad("unknown flag (count, range-first, store-only, lse, exclusive, cache@N, counters@N)", parts[i]);
    }
  }
  if (Status s = cfg.validate(); !s) return make_error(ErrorCode::kParse, s.error().message);
  return cfg;
}

std::vector<EmitterConfig> all_emitter_configs() {
  std::vector<EmitterConfig> out;
  for (CacheLocation c : {CacheLocation::kNone, CacheLocation::kThreadField, CacheLocation::kPinnedRegister})
    for (MarkMode m : {MarkMode::kRacy, MarkMode::kRacyTestFirst, MarkMode::kAtomic, MarkMode::kAtomicTestFirst})
      for (bool count : {false, true})
        for (BoundsSource b : {BoundsSource::kImmediate, BoundsSource::kDescriptor})
          for (bool range_first : {false, true}) {
            if (range_first && (c == CacheLocation::kNone || count)) continue;  // no order; see validate()
            EmitterConfig e;
            e.cache = c;
            e.mark = m;
            e.count = count;
            e.bounds = b;
            e.range_first = range_first;
            out.push_back(e);
          }
  return out;
}

bool thread_layout_matches() noexcept {
  ThreadState t(0, {});
  const auto* base = reinterpret_cast<const char*>(&t);
  auto at = [&](const void* field) { return static_cast<std::size_t>(static_cast<const char*>(field) - base); };
  const ThreadFields f;
  return at(&t.cache) == thread_layout::kCache && at(&t.counters) == thread_layout::kCounters &&
         at(&t.counters.executed) == static_cast<std::size_t>(f.executed()) &&
         at(&t.counters.cache_hits) == static_cast<std::size_t>(f.cache_hits()) &&
         at(&t.counters.marks) == static_cast<std::size_t>(f.marks());
}

}  // namespace objprof::backends
