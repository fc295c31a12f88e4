// on_free_batch: a sweep that frees objects one at a time hands them over in batches. It must be
// indistinguishable from one on_free per address: the same trace, the same statistics, the same
// leaks found online, and the same protocol errors for the same misuse.
#include <objprof/profiler.h>

#include "test_support.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <random>
#include <vector>

namespace test_free_batch {

using namespace objprof;
using objprof::test::ProfilerRig;

namespace {

constexpr std::size_t kSlot = 2048;
constexpr std::size_t kSlots = 256;

// One random program run on a rig: objects of 1 KiB (tracked) and 64 bytes in 2 KiB slots, some
// touched each epoch, some freed at each GC, the frees reported one by one or in batches of
// random sizes (empty ones too).
void run_program(ProfilerRig& r, std::uint64_t seed, bool batched) {
  std::mt19937_64 rng(seed);
  std::mt19937_64 batches(seed + 1000);  // batch sizes only: the program is the same either way
  std::vector<bool> live(kSlots, false);
  std::vector<Address> dead;
  for (int epoch = 0; epoch < 12; ++epoch) {
    for (std::size_t s = 0; s < kSlots; ++s) {
      if (!live[s] && rng() % 3 == 0) {
        const std::uint64_t size = rng() % 2 ? 1024 : 64;
        r.prof->on_alloc(*r.thread, static_cast<std::uint32_t>(1 + s % 5), static_cast<std::uint32_t>(size), r.at(s * kSlot), size);
        live[s] = true;
      }
      if (live[s] && s % 4 != 0 && rng() % 2) r.touch(s * kSlot);  // slots 0, 4, 8... are never touched: leaks
    }
    REQUIRE(r.prof->gc_begin(GcKind::kFull).ok());
    dead.clear();
    for (std::size_t s = 0; s < kSlots; ++s)
      if (live[s] && rng() % 4 == 0) {
        dead.push_back(r.at(s * kSlot));
        live[s] = false;
      }
    std::shuffle(dead.begin(), dead.end(), rng);
    if (batched) {
      for (std::size_t i = 0; i < dead.size();) {
        const std::size_t n = std::min<std::size_t>(batches() % 7, dead.size() - i);
        r.prof->on_free_batch(std::span<const Address>(dead).subspan(i, n));
        i += n;
      }
    } else {
      for (Address a : dead) r.prof->on_free(a);
    }
    REQUIRE(r.prof->gc_end().ok());
  }
}

// The runs of one program on two rigs, freeing one by one and in batches, ended with the same
// statistics and found the same leaks (at the same offsets: the heaps differ).
void require_same_outcome(ProfilerRig& one, ProfilerRig& batch) {
  const ProfilerStats a = one.prof->stats(), b = batch.prof->stats();
  CHECK(a.frees > 100);
  CHECK(a.frees == b.frees);
  CHECK(a.objects_tracked == b.objects_tracked);
  CHECK(a.tracked_live == b.tracked_live);
  CHECK(a.leaks_reported == b.leaks_reported);
  test::require_same_leaks(one.leaks, one.heap.space().begin(), batch.leaks, batch.heap.space().begin());
}

}  // namespace

TEST_CASE("on_free_batch: the same trace, statistics and leaks as one on_free per address", "[core][profiler]") {
  // With hook checks (one address at a time through the shadow heap) and without (the trace's
  // records written in one loop over the batch).
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    const bool checks = seed % 2 == 1;
    INFO("seed " << seed << (checks ? ", hook checks" : ", no hook checks"));
    const auto configure = [checks](ProfilerOptions& o) { o.check_hooks = checks; };
    ProfilerRig one(kSlots * kSlot, configure), batch(kSlots * kSlot, configure);
    run_program(one, seed, false);
    run_program(batch, seed, true);
    CHECK(one.errors.empty());
    CHECK(batch.errors.empty());
    require_same_outcome(one, batch);
    // The traces tell the analyzer the same deaths, GC by GC (their bytes differ only by the
    // heaps' addresses).
    const analysis::TraceAnalysis ta = one.analyze(), tb = batch.analyze();
    CHECK(ta.stats.frees == one.prof->stats().frees);
    CHECK(ta.stats.frees == tb.stats.frees);
    CHECK(ta.stats.unknown_frees == 0);
    CHECK(tb.stats.unknown_frees == 0);
    CHECK(ta.stats.trace_bytes == tb.stats.trace_bytes);
    REQUIRE(ta.gcs.size() == tb.gcs.size());
    for (std::size_t e = 0; e < ta.gcs.size(); ++e) {
      CHECK(ta.gcs[e].freed_objects == tb.gcs[e].freed_objects);
      CHECK(ta.gcs[e].freed_bytes == tb.gcs[e].freed_bytes);
      CHECK(ta.gcs[e].live_objects_after == tb.gcs[e].live_objects_after);
    }
    CHECK(ta.live_objects == tb.live_objects);
  }
}

TEST_CASE("on_free_batch: without hook checks or a trace, the same statistics and leaks", "[core][profiler]") {
  // The hook's fast path: nothing but counting and the tracker's filter.
  auto plain = [](ProfilerOptions& o) {
    o.check_hooks = false;
    o.trace_sink = nullptr;
  };
  for (std::uint64_t seed = 11; seed <= 16; ++seed) {
    INFO("seed " << seed);
    ProfilerRig one(kSlots * kSlot, plain), batch(kSlots * kSlot, plain);
    run_program(one, seed, false);
    run_program(batch, seed, true);
    require_same_outcome(one, batch);
  }
}

TEST_CASE("on_free_batch: misuse is reported as for on_free", "[core][protocol]") {
  ProfilerRig r(kSlots * kSlot);
  r.prof->on_alloc(*r.thread, 1, 1, r.at(0), 1024);
  r.prof->on_alloc(*r.thread, 1, 1, r.at(kSlot), 1024);
  const std::vector<Address> both{r.at(0), r.at(kSlot)};
  SECTION("outside gc_begin/gc_end the whole batch is refused") {
    r.prof->on_free_batch(both);
    REQUIRE(r.errors.size() == 1);
    CHECK(r.errors[0].hook == "on_free_batch");
    CHECK(r.errors[0].addr == r.at(0));
    CHECK(r.messages[0].find("2 frees outside gc_begin/gc_end") != std::string::npos);
    r.gc();
    CHECK(r.prof->stats().tracked_live == 2);  // nothing died
  }
  SECTION("an address outside the spaces is refused, the rest of the batch applies") {
    const std::vector<Address> mixed{r.at(0), r.heap.space().end() + 64, r.at(kSlot)};
    REQUIRE(r.prof->gc_begin(GcKind::kFull).ok());
    r.prof->on_free_batch(mixed);
    REQUIRE(r.prof->gc_end().ok());
    REQUIRE(r.errors.size() == 1);
    CHECK(r.errors[0].hook == "on_free_batch");
    CHECK(r.errors[0].addr == r.heap.space().end() + 64);
    CHECK(r.prof->stats().frees == 2);
    CHECK(r.prof->stats().tracked_live == 0);
  }
  SECTION("a free where no live object starts is the hook checker's error, as for on_free") {
    const std::vector<Address> twice{r.at(0), r.at(0)};
    REQUIRE(r.prof->gc_begin(GcKind::kFull).ok());
    r.prof->on_free_batch(twice);
    REQUIRE(r.prof->gc_end().ok());
    REQUIRE(r.errors.size() == 1);
    CHECK(r.errors[0].addr == r.at(0));
    CHECK(r.prof->stats().tracked_live == 1);
  }
  SECTION("an empty batch is nothing, even outside a bracket") {
    r.prof->on_free_batch({});
    CHECK(r.errors.empty());
  }
}

}  // namespace test_free_batch
