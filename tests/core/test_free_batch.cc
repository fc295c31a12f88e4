// on_free_batch: a sweep that frees objects one at a time hands them over in batches. It must be
// indistinguishable from one on_free per address: the same trace, the same statistics, the same
// leaks found online, and the same protocol errors for the same misuse. So must a sweep that
// reports each free through on_free_if_inline and batches only those it declines.
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
// random sizes (empty ones too), or each first to on_free_if_inline and the ones it declines in
// batches (as the Lua embedding's sweep does). Returns how many on_free_if_inline took.
enum class Frees { kEach, kBatched, kInlineElseBatched };
std::uint64_t run_program(ProfilerRig& r, std::uint64_t seed, Frees mode) {
  std::uint64_t inlined = 0;
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
    if (mode == Frees::kInlineElseBatched)
      std::erase_if(dead, [&](Address a) {
        const bool took = r.prof->on_free_if_inline(a);
        inlined += took;
        return took;
      });
    if (mode != Frees::kEach) {
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
  return inlined;
}

// The runs of one program on two rigs, freeing one by one and in batches, ended with the same
// statistics and found the same leaks (at the same offsets: the heaps differ).
void require_same_outcome(ProfilerRig& one, ProfilerRig& batch) {
  const ProfilerStats a = one.prof->stats(), b = batch.prof->stats();
  CHECK(a.frees > 100);
  CHECK(a.frees == b.frees);
  test::require_same_tracking(one, batch);
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
    run_program(one, seed, Frees::kEach);
    // With a trace (every rig writes one) the inline path never applies: every free is batched.
    CHECK(run_program(batch, seed, seed % 4 < 2 ? Frees::kBatched : Frees::kInlineElseBatched) == 0);
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
    ProfilerRig one(kSlots * kSlot, plain), batch(kSlots * kSlot, plain), inl(kSlots * kSlot, plain);
    run_program(one, seed, Frees::kEach);
    CHECK(run_program(batch, seed, Frees::kBatched) == 0);
    // Every free inside the bracket and the space takes on_free_if_inline's path.
    CHECK(run_program(inl, seed, Frees::kInlineElseBatched) == one.prof->stats().frees);
    require_same_outcome(one, batch);
    require_same_outcome(one, inl);
  }
}

TEST_CASE("on_free_if_inline declines, doing nothing, where on_free would go out of line", "[core][protocol]") {
  auto plain = [](ProfilerOptions& o) {
    o.check_hooks = false;
    o.trace_sink = nullptr;
  };
  ProfilerRig r(kSlots * kSlot, plain);
  r.prof->on_alloc(*r.thread, 1, 1, r.at(0), 1024);
  SECTION("outside gc_begin/gc_end: no error, nothing freed (on_free would report the misuse)") {
    CHECK_FALSE(r.prof->on_free_if_inline(r.at(0)));
    CHECK(r.errors.empty());
    r.gc();
    CHECK(r.prof->stats().frees == 0);
    CHECK(r.prof->stats().tracked_live == 1);
  }
  SECTION("an address outside the space, inside a bracket") {
    REQUIRE(r.prof->gc_begin(GcKind::kFull).ok());
    CHECK_FALSE(r.prof->on_free_if_inline(r.heap.space().end() + 64));
    CHECK_FALSE(r.prof->on_free_if_inline(r.heap.space().begin() - 64));
    CHECK(r.prof->on_free_if_inline(r.at(0)));
    REQUIRE(r.prof->gc_end().ok());
    CHECK(r.errors.empty());
    CHECK(r.prof->stats().frees == 1);
    CHECK(r.prof->stats().tracked_live == 0);
  }
  SECTION("with hook checks: declined, and on_free then checks it") {
    ProfilerRig c(kSlots * kSlot, [](ProfilerOptions& o) {
      o.check_hooks = true;
      o.trace_sink = nullptr;
    });
    REQUIRE(c.prof->gc_begin(GcKind::kFull).ok());
    CHECK_FALSE(c.prof->on_free_if_inline(c.at(0)));  // no object there: on_free reports it
    c.prof->on_free(c.at(0));
    REQUIRE(c.prof->gc_end().ok());
    CHECK(c.errors.size() == 1);
  }
}

TEST_CASE("on_alloc_if_inline counts what on_alloc would only count, and declines everything else", "[core][profiler]") {
  auto plain = [](ProfilerOptions& o) {
    o.check_hooks = false;
    o.trace_sink = nullptr;
  };
  SECTION("a small object in the space: counted, nothing tracked; the same program through on_alloc agrees") {
    ProfilerRig a(kSlots * kSlot, plain), b(kSlots * kSlot, plain);
    const std::uint64_t floor = a.prof->min_tracked_size();
    REQUIRE(floor > 64);
    std::uint64_t took = 0;
    for (std::size_t s = 0; s < kSlots; ++s) {
      const std::uint64_t size = s % 3 == 0 ? floor : 64 + s % 7 * 8;  // every third one tracked
      b.prof->on_alloc(*b.thread, 7, 3, b.at(s * kSlot), size);
      if (a.prof->on_alloc_if_inline(*a.thread, a.at(s * kSlot), size)) {
        ++took;
        CHECK(size < floor);
      } else {
        CHECK(size >= floor);
        a.prof->on_alloc(*a.thread, 7, 3, a.at(s * kSlot), size);
      }
    }
    CHECK(took == kSlots - (kSlots + 2) / 3);
    a.gc();
    b.gc();
    CHECK(a.prof->stats().objects_allocated == b.prof->stats().objects_allocated);
    CHECK(a.prof->stats().bytes_allocated == b.prof->stats().bytes_allocated);
    CHECK(a.prof->stats().tracked_live == b.prof->stats().tracked_live);
    CHECK(a.prof->stats().tracked_live == (kSlots + 2) / 3);
    CHECK(a.errors.empty());
  }
  SECTION("outside the space, or reaching past its end: declined, nothing counted") {
    ProfilerRig r(kSlots * kSlot, plain);
    const Address end = r.heap.space().end();
    CHECK_FALSE(r.prof->on_alloc_if_inline(*r.thread, end + 64, 64));
    CHECK_FALSE(r.prof->on_alloc_if_inline(*r.thread, r.heap.space().begin() - 64, 64));
    CHECK_FALSE(r.prof->on_alloc_if_inline(*r.thread, end - 32, 64));
    r.gc();
    CHECK(r.prof->stats().objects_allocated == 0);
    CHECK(r.errors.empty());
  }
  SECTION("with a trace, hook checks or marks at allocation: always declined (on_alloc has more to do)") {
    ProfilerRig traced(kSlots * kSlot, [](ProfilerOptions& o) { o.check_hooks = false; });  // the rig's trace alone
    CHECK_FALSE(traced.prof->on_alloc_if_inline(*traced.thread, traced.at(0), 64));
    ProfilerRig checked(kSlots * kSlot, [](ProfilerOptions& o) {
      o.check_hooks = true;
      o.trace_sink = nullptr;
    });
    CHECK_FALSE(checked.prof->on_alloc_if_inline(*checked.thread, checked.at(0), 64));
    ProfilerRig marking(kSlots * kSlot, [](ProfilerOptions& o) {
      o.check_hooks = false;
      o.trace_sink = nullptr;
      o.mark_on_alloc = true;
    });
    CHECK_FALSE(marking.prof->on_alloc_if_inline(*marking.thread, marking.at(0), 64));
    for (ProfilerRig* r : {&traced, &checked, &marking}) {
      r->gc();
      CHECK(r->prof->stats().objects_allocated == 0);
    }
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
