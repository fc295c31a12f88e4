// EmitterConfig is the one description shared by the C++ barrier and the emitters.
#include "backends/emit_config.h"

#include <catch2/catch.hpp>

#include <set>

using namespace objprof;
using namespace objprof::backends;

TEST_CASE("backends: EmitterConfig round-trips through the C++ BarrierConfig", "[backends][config]") {
  for (bool cache : {false, true})
    for (MarkMode m : {MarkMode::kRacy, MarkMode::kAtomic, MarkMode::kAtomicTestFirst})
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
  // none: 3 marks x 2 counts x 2 bounds; field and pinned: also the range-first order when not counting.
  CHECK(all.size() == 12 + 2 * 18);
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
  CHECK(thread_layout::kExecuted != thread_layout::kCacheHits);
  CHECK(thread_layout::kCacheHits != thread_layout::kMarks);
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
