// EmitterConfig is the one description shared by the C++ barrier and the emitters.
#include "backends/emit_config.h"

#include <catch2/catch.hpp>

#include <set>

namespace test_emit_config {

using namespace objprof;
using namespace objprof::backends;

TEST_CASE("backends: EmitterConfig round-trips through the C++ BarrierConfig", "[backends][config]") {
  for (bool cache : {false, true})
    for (MarkMode m : {MarkMode::kRacy, MarkMode::kRacyTestFirst, MarkMode::kAtomic, MarkMode::kAtomicTestFirst})
      for (bool count : {false, true})
        for (CacheLocation where : {CacheLocation::kThreadField, CacheLocation::kPinnedRegister}) {
          const BarrierConfig c{cache, m, count};
          const EmitterConfig e = EmitterConfig::from(c, where);
          CHECK(e.cache == (cache ? where : CacheLocation::kNone));
          const BarrierConfig back = e.barrier_config();
          CHECK(back.cache == c.cache);
          CHECK(back.mark == c.mark);
          CHECK(back.count == c.count);
        }
}

TEST_CASE("backends: Every emitter variant has a distinct name that parses back to it", "[backends][config]") {
  const std::vector<EmitterConfig> all = all_emitter_configs();
  // none: 4 marks x 2 counts x 2 bounds; field and pinned: also the range-first order when not counting.
  CHECK(all.size() == 16 + 2 * 24);
  std::set<std::string> names;
  for (const EmitterConfig& cfg : all) {
    INFO(cfg.name());
    CHECK(names.insert(cfg.name()).second);
    Result<EmitterConfig> parsed = parse_emitter_config(cfg.name());
    REQUIRE(parsed.ok());
    CHECK(*parsed == cfg);
  }
  Result<EmitterConfig> lse = parse_emitter_config("pinned/atomic/imm/lse/count");
  REQUIRE(lse.ok());
  CHECK(lse->a64_atomics == A64Atomics::kLse);
  CHECK(lse->count);
  CHECK(parse_emitter_config(lse->name()).ok());
}

TEST_CASE("backends: Malformed emitter variant names are refused with a message", "[backends][config]") {
  for (const char* bad : {"", "field", "field/racy", "cache/racy/desc", "field/lazy/desc", "field/racy/heap",
                          "field/racy/desc/fast", "a/b/c/d/e/f/g/h/i", "field/racy/desc/count/range-first"}) {
    INFO(bad);
    Result<EmitterConfig> r = parse_emitter_config(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == ErrorCode::kParse);
    CHECK_FALSE(r.error().message.empty());
  }
}

TEST_CASE("backends: Thread layout offsets address the fields of a live ThreadState", "[backends][config]") {
  CHECK(thread_layout_matches());
  CHECK(thread_layout::kCache == kThreadCacheOffset);
  const ThreadFields f;  // the default: ThreadState's fields
  CHECK(EmitterConfig{}.fields == f);
  CHECK(f.executed() != f.cache_hits());
  CHECK(f.cache_hits() != f.marks());
  CHECK(EmitterConfig{}.validate(Isa::kX86_64).ok());
  CHECK(EmitterConfig{}.validate(Isa::kArm64).ok());
}

namespace {
Status fields_status(std::int64_t cache, std::int64_t counters, Isa isa) {
  EmitterConfig cfg;
  cfg.count = true;
  cfg.fields.cache = cache;
  cfg.fields.counters = counters;
  return cfg.validate(isa);
}
bool refused_with(const Status& s, const char* text) {
  INFO((s ? std::string("accepted") : s.error().message));
  return !s.ok() && s.error().message.find(text) != std::string::npos;
}
}  // namespace

TEST_CASE("backends: Thread-field offsets are refused unless aligned and encodable in one load or store",
          "[backends][config]") {
  const ThreadFields def;
  for (Isa isa : {Isa::kX86_64, Isa::kArm64}) {
    INFO(isa_name(isa));
    CHECK(fields_status(40, 48, isa).ok());
    CHECK(refused_with(fields_status(44, def.counters, isa), "cache offset 44 is not a multiple of 8"));
    CHECK(refused_with(fields_status(def.cache, 12, isa), "counters offset 12 is not a multiple of 8"));
  }
  // arm64: ldr/str xN, [base, #imm]: 0..32760 in steps of 8, for the cache and all three counters.
  CHECK(fields_status(32760, 32744, Isa::kArm64).ok());
  CHECK(refused_with(fields_status(32768, def.counters, Isa::kArm64), "arm64 barrier"));
  CHECK(refused_with(fields_status(32768, def.counters, Isa::kArm64), "cache offset 32768 cannot be encoded"));
  CHECK(refused_with(fields_status(-8, def.counters, Isa::kArm64), "unsigned offset"));
  CHECK(refused_with(fields_status(def.cache, 32752, Isa::kArm64), "counters offset 32752 cannot be encoded"));
  // x86_64: a signed 32-bit displacement, so negative and large offsets are fine up to 2^31.
  CHECK(fields_status(-8, 32768, Isa::kX86_64).ok());
  CHECK(fields_status(std::int64_t{1} << 30, (std::int64_t{1} << 31) - 24, Isa::kX86_64).ok());
  CHECK(refused_with(fields_status(std::int64_t{1} << 31, def.counters, Isa::kX86_64), "32-bit displacement"));
  CHECK(refused_with(fields_status(def.cache, (std::int64_t{1} << 31) - 16, Isa::kX86_64), "counters offset"));
  CHECK(refused_with(fields_status(-(std::int64_t{1} << 31) - 8, def.counters, Isa::kX86_64), "cache offset"));
}

TEST_CASE("backends: Thread-field offsets other than ThreadState's are part of the variant's name", "[backends][config]") {
  EmitterConfig cfg;
  cfg.fields.cache = 40;
  cfg.fields.counters = 56;
  CHECK(cfg.name() == "field/racy/desc/cache@40/counters@56");
  Result<EmitterConfig> back = parse_emitter_config(cfg.name());
  REQUIRE(back.ok());
  CHECK(*back == cfg);
  Result<EmitterConfig> neg = parse_emitter_config("pinned/atomic/imm/cache@-16");
  REQUIRE(neg.ok());
  CHECK(neg->fields.cache == -16);
  CHECK(neg->fields.counters == ThreadFields{}.counters);
  for (const char* bad : {"field/racy/desc/cache@", "field/racy/desc/cache@4x", "field/racy/desc/cache@41",
                          "field/racy/desc/counters@0x10"}) {
    INFO(bad);
    Result<EmitterConfig> r = parse_emitter_config(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == ErrorCode::kParse);
  }
}

TEST_CASE("backends: The range-first order is refused with counters, whose hits it would count differently", "[backends][config]") {
  EmitterConfig cfg;
  cfg.range_first = true;
  CHECK(cfg.validate().ok());
  cfg.count = true;
  Status s = cfg.validate();
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message.find("range-first") != std::string::npos);
}

}  // namespace test_emit_config
