// A copying collector reports its evacuated area as one free range: a free range frees only what
// the same GC does not move, wherever the range stands among the moves. It must be
// indistinguishable from reporting each dead object: the same statistics, the same leaks found
// online, the same analyzed trace, and no protocol error from the hook checker.
#include <objprof/profiler.h>

#include "test_support.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <random>
#include <vector>

namespace test_evacuation {

using namespace objprof;

namespace {

constexpr std::size_t kSlot = 2048;
constexpr std::size_t kSlots = 128;
constexpr std::size_t kHalf = kSlot * kSlots;

enum class Deaths { kEach, kEvacuated };

struct CopyingRig {
  test::FakeHeap heap{2 * kHalf};
  MemorySink* sink = nullptr;
  std::vector<LeakReport> leaks;
  std::vector<ProtocolError> errors;
  std::unique_ptr<Profiler> prof;
  ThreadState* thread = nullptr;
  bool two_spaces;

  CopyingRig(bool checks_and_trace, bool two) : two_spaces(two) {
    ProfilerOptions o;
    test::rig_defaults(o);
    o.check_hooks = checks_and_trace;
    if (checks_and_trace) {
      auto s = std::make_unique<MemorySink>();
      sink = s.get();
      o.trace_sink = std::move(s);
    }
    o.on_leak = [this](const LeakReport& r) { leaks.push_back(r); };
    o.on_protocol_error = [this](const ProtocolError& e) { errors.push_back(e); };
    prof = std::move(*Profiler::create(std::move(o)));
    if (two) {
      for (int h = 0; h < 2; ++h) {
        auto space = HeapSpace::make(heap.at(h * kHalf), heap.at(h * kHalf) + kHalf, 8, h == 0 ? "half-0" : "half-1");
        REQUIRE(space.ok());
        REQUIRE(prof->add_space(*space).ok());
      }
    } else {
      REQUIRE(prof->add_space(heap.space()).ok());
    }
    thread = *prof->attach_thread(1, "main");
  }
  void touch(Address a) {
    const std::size_t s = two_spaces && a >= heap.at(kHalf) ? 1 : 0;
    access(*thread, prof->barrier_descriptor(s), a);
  }
};

// One random program: objects of 1 KiB (tracked) and 64 bytes in the slots of the current half,
// some touched each epoch (slots 0, 4, 8... never: leaks), some dying at each GC; the survivors
// are copied to the other half in a random order. Deaths go one on_free each, or as one range
// over the whole evacuated half at a random point among the moves.
void run_program(CopyingRig& r, std::uint64_t seed, Deaths deaths) {
  std::mt19937_64 rng(seed);
  std::mt19937_64 when(seed + 1000);  // where the range goes among the moves: not the program
  std::vector<std::uint64_t> size(kSlots, 0);  // per slot of the current half; 0 = free
  std::vector<std::uint32_t> site(kSlots, 0);
  std::size_t half = 0;
  for (int epoch = 0; epoch < 14; ++epoch) {
    const Address base = r.heap.at(half * kHalf);
    for (std::size_t s = 0; s < kSlots; ++s) {
      if (size[s] == 0 && rng() % 3 == 0) {
        size[s] = rng() % 2 ? 1024 : 64;
        site[s] = static_cast<std::uint32_t>(1 + s % 5);
        r.prof->on_alloc(*r.thread, site[s], static_cast<std::uint32_t>(size[s]), base + s * kSlot, size[s]);
      }
      if (size[s] != 0 && s % 4 != 0 && rng() % 2) r.touch(base + s * kSlot);
    }
    REQUIRE(r.prof->gc_begin(GcKind::kCopying).ok());
    const Address to_base = r.heap.at((1 - half) * kHalf);
    std::vector<std::size_t> order(kSlots);
    for (std::size_t s = 0; s < kSlots; ++s) order[s] = s;
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<std::uint64_t> next_size(kSlots, 0);
    std::vector<std::uint32_t> next_site(kSlots, 0);
    std::size_t next = 0;  // survivors are copied to the other half's first slots, in `order`
    const std::size_t range_at = when() % (kSlots + 1);
    for (std::size_t i = 0; i <= kSlots; ++i) {
      if (deaths == Deaths::kEvacuated && i == range_at) r.prof->on_free_range(base, kHalf);
      if (i == kSlots) break;
      const std::size_t s = order[i];
      if (size[s] == 0) continue;
      if (rng() % 4 == 0) {  // dies
        if (deaths == Deaths::kEach) r.prof->on_free(base + s * kSlot);
        continue;
      }
      r.prof->on_move(base + s * kSlot, to_base + next * kSlot);
      next_size[next] = size[s];
      next_site[next] = site[s];
      ++next;
    }
    REQUIRE(r.prof->gc_end().ok());
    size.swap(next_size);
    site.swap(next_site);
    half = 1 - half;
  }
}

void require_same_outcome(CopyingRig& each, CopyingRig& evac) {
  const ProfilerStats a = each.prof->stats(), b = evac.prof->stats();
  CHECK(a.frees > 100);
  CHECK(b.frees == 0);
  CHECK(b.free_ranges == 14);
  CHECK(a.moves == b.moves);
  test::require_same_tracking(*each.prof, each.leaks, each.heap.space().begin(), *evac.prof, evac.leaks,
                              evac.heap.space().begin());
}

analysis::TraceAnalysis analyze(CopyingRig& r) {
  REQUIRE(r.prof->finish().ok());
  auto a = analysis::analyze(std::span<const std::byte>(r.sink->data()));
  REQUIRE(a.ok());
  return std::move(*a);
}


// A GC's one free range over part of the heap only, with objects outside it: those stay or move,
// those inside it die or move out of it. One space of 256 slots of `slot` bytes; objects of
// `slot` bytes (tracked: 128 bytes and up) or 64 (not), touched at random except every fifth
// slot's (leaks). At each GC a random run of slots is the area freed; its objects die (1 in 3)
// or move to a slot outside it that was free before the GC; outside it, 1 in 4 moves the same
// way and the others stay. `one_range`: the GC reports its deaths as that range, at a random
// point among the moves; otherwise each dead object with on_free. With 128-byte slots two
// tracked objects often share a 256-byte move card, so the tracker cannot card their moves.
struct PartialRig {
  test::ProfilerRig rig;
  PartialRig(std::size_t slot, bool checks_and_trace)
      : rig(256 * slot, [checks_and_trace](ProfilerOptions& o) {
          o.min_tracked_size = 128;
          o.check_hooks = checks_and_trace;
          if (!checks_and_trace) o.trace_sink = nullptr;
        }) {}
};

void run_partial(test::ProfilerRig& r, std::uint64_t seed, bool one_range, std::size_t slot) {
  constexpr std::size_t kN = 256;
  std::mt19937_64 rng(seed);
  std::mt19937_64 when(seed + 1000);  // where the range goes among the moves: not the program
  std::vector<std::uint64_t> size(kN, 0);  // 0 = free
  for (int epoch = 0; epoch < 16; ++epoch) {
    for (std::size_t s = 0; s < kN; ++s) {
      if (size[s] == 0 && rng() % 4 == 0) {
        size[s] = rng() % 3 ? slot : 64;
        r.prof->on_alloc(*r.thread, static_cast<std::uint32_t>(1 + s % 3), 1, r.at(s * slot), size[s]);
      }
      if (size[s] != 0 && s % 5 != 0 && rng() % 2) r.touch(s * slot);
    }
    REQUIRE(r.prof->gc_begin(GcKind::kCopying).ok());
    const std::size_t lo = rng() % kN, hi = lo + 1 + rng() % (kN - lo);
    std::vector<std::size_t> free_slots;
    for (std::size_t s = 0; s < kN; ++s)
      if (size[s] == 0 && (s < lo || s >= hi)) free_slots.push_back(s);
    std::shuffle(free_slots.begin(), free_slots.end(), rng);
    std::vector<std::size_t> order(kN);
    for (std::size_t s = 0; s < kN; ++s) order[s] = s;
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<std::uint64_t> next = size;
    const std::size_t range_at = when() % (kN + 1);
    for (std::size_t i = 0; i <= kN; ++i) {
      if (one_range && i == range_at) r.prof->on_free_range(r.at(lo * slot), (hi - lo) * slot);
      if (i == kN) break;
      const std::size_t s = order[i];
      if (size[s] == 0) continue;
      const bool inside = s >= lo && s < hi;
      const bool moves = inside ? rng() % 3 != 0 : rng() % 4 == 0;
      if (moves && !free_slots.empty()) {
        const std::size_t to = free_slots.back();
        free_slots.pop_back();
        r.prof->on_move(r.at(s * slot), r.at(to * slot));
        next[to] = size[s];
        next[s] = 0;
      } else if (inside) {  // dies
        if (!one_range) r.prof->on_free(r.at(s * slot));
        next[s] = 0;
      }
    }
    REQUIRE(r.prof->gc_end().ok());
    size.swap(next);
  }
}

}  // namespace

TEST_CASE("evacuation: one free range over the from-space frees only what did not move", "[core][profiler]") {
  for (bool two_spaces : {false, true}) {
    for (std::uint64_t seed = 1; seed <= 5; ++seed) {
      INFO((two_spaces ? "two spaces" : "one space") << ", seed " << seed);
      CopyingRig each(true, two_spaces), evac(true, two_spaces);
      run_program(each, seed, Deaths::kEach);
      run_program(evac, seed, Deaths::kEvacuated);
      CHECK(each.errors.empty());
      CHECK(evac.errors.empty());  // the hook checker accepts a range over moved objects
      require_same_outcome(each, evac);
      // The analyzer sees the same deaths, GC by GC, and every move finds its object.
      const analysis::TraceAnalysis ta = analyze(each), tb = analyze(evac);
      CHECK(ta.stats.unknown_frees == 0);
      CHECK(ta.stats.unknown_moves == 0);
      CHECK(tb.stats.unknown_moves == 0);
      CHECK(ta.stats.moves == tb.stats.moves);
      REQUIRE(ta.gcs.size() == tb.gcs.size());
      for (std::size_t e = 0; e < ta.gcs.size(); ++e) {
        INFO("GC " << e);
        CHECK(ta.gcs[e].freed_objects == tb.gcs[e].freed_objects);
        CHECK(ta.gcs[e].freed_bytes == tb.gcs[e].freed_bytes);
        CHECK(ta.gcs[e].live_objects_after == tb.gcs[e].live_objects_after);
      }
      CHECK(ta.live_objects == tb.live_objects);
    }
  }
}

TEST_CASE("evacuation: without hook checks or a trace, the same statistics and leaks", "[core][profiler]") {
  // The tracker's fast path (one space: moves indexed, the range's bits spared at the sources)
  // and its indexed path (two spaces: every survivor changes space).
  for (bool two_spaces : {false, true}) {
    for (std::uint64_t seed = 11; seed <= 15; ++seed) {
      INFO((two_spaces ? "two spaces" : "one space") << ", seed " << seed);
      CopyingRig each(false, two_spaces), evac(false, two_spaces);
      run_program(each, seed, Deaths::kEach);
      run_program(evac, seed, Deaths::kEvacuated);
      require_same_outcome(each, evac);
    }
  }
}

TEST_CASE("evacuation: one free range over part of the heap, beside objects that stay or move outside it",
          "[core][profiler]") {
  for (std::size_t slot : {std::size_t{128}, std::size_t{2048}}) {
    for (bool checks : {true, false}) {
      for (std::uint64_t seed = 21; seed <= 26; ++seed) {
        INFO(slot << "-byte slots, " << (checks ? "checked hooks and a trace" : "plain hooks") << ", seed " << seed);
        PartialRig each(slot, checks), range(slot, checks);
        run_partial(each.rig, seed, false, slot);
        run_partial(range.rig, seed, true, slot);
        CHECK(each.rig.errors.empty());
        CHECK(range.rig.errors.empty());
        const ProfilerStats a = each.rig.prof->stats(), b = range.rig.prof->stats();
        CHECK(a.frees > 50);
        CHECK(b.frees == 0);
        CHECK(b.free_ranges == 16);
        CHECK(a.moves == b.moves);
        CHECK(a.tracked_live > 20);
        test::require_same_tracking(each.rig, range.rig);
        if (checks) {
          const analysis::TraceAnalysis ta = each.rig.analyze(), tb = range.rig.analyze();
          CHECK(tb.stats.unknown_moves == 0);
          CHECK(ta.live_objects == tb.live_objects);
        }
      }
    }
  }
}

TEST_CASE("evacuation: an object both moved and freed alone in one GC is an error", "[core][protocol]") {
  test::ProfilerRig r(8 * kSlot);
  r.prof->on_alloc(*r.thread, 1, 1, r.at(0), 1024);
  r.prof->on_alloc(*r.thread, 1, 1, r.at(kSlot), 1024);
  REQUIRE(r.prof->gc_begin(GcKind::kCopying).ok());
  r.prof->on_move(r.at(0), r.at(4 * kSlot));
  r.prof->on_move(r.at(kSlot), r.at(5 * kSlot));
  r.prof->on_free(r.at(kSlot));  // a single free is not a range: it names the object
  r.prof->on_free_range(r.at(0), 2 * kSlot);
  REQUIRE(r.prof->gc_end().ok());
  // Reported for the object at kSlot only, by each hook that claims it a second time (the move;
  // the range, which names it): the object at 0 moved, and the range spared it.
  REQUIRE(!r.errors.empty());
  char name[32];
  std::snprintf(name, sizeof name, "%#llx", static_cast<unsigned long long>(r.at(kSlot)));
  for (std::size_t i = 0; i < r.errors.size(); ++i) {
    INFO(r.messages[i]);
    CHECK((r.errors[i].addr == r.at(kSlot) || r.messages[i].find(std::string("object ") + name) != std::string::npos));
    CHECK(r.messages[i].find("already freed") != std::string::npos);
  }
}

TEST_CASE("evacuation: a range reported before the moves spares them", "[core][profiler]") {
  test::ProfilerRig r(8 * kSlot);
  r.prof->on_alloc(*r.thread, 1, 1, r.at(0), 1024);
  r.prof->on_alloc(*r.thread, 1, 1, r.at(kSlot), 1024);
  r.prof->on_alloc(*r.thread, 1, 1, r.at(2 * kSlot), 1024);
  REQUIRE(r.prof->gc_begin(GcKind::kCopying).ok());
  r.prof->on_free_range(r.at(0), 4 * kSlot);
  r.prof->on_move(r.at(kSlot), r.at(4 * kSlot));
  r.prof->on_move(r.at(0), r.at(5 * kSlot));
  REQUIRE(r.prof->gc_end().ok());
  CHECK(r.errors.empty());
  CHECK(r.prof->stats().tracked_live == 2);  // the object at 2 * kSlot died with the range
  const analysis::TraceAnalysis a = r.analyze();
  CHECK(a.live_objects == 2);
  CHECK(a.stats.unknown_moves == 0);
  REQUIRE(a.gcs.size() == 1);
  CHECK(a.gcs[0].freed_objects == 1);
}

TEST_CASE("collector hooks without checks or a trace still refuse misuse", "[core][protocol]") {
  // The hooks' short path (plain_collector_hooks_) hands anything outside the bracket or the
  // space to the full path, which reports it.
  test::ProfilerRig r(8 * kSlot, [](ProfilerOptions& o) {
    o.check_hooks = false;
    o.trace_sink = nullptr;
  });
  r.prof->on_alloc(*r.thread, 1, 1, r.at(0), 1024);
  r.prof->on_move(r.at(0), r.at(kSlot));               // outside gc_begin/gc_end
  r.prof->on_move_range(r.at(0), r.at(kSlot), 1024);  // the same
  REQUIRE(r.errors.size() == 2);
  CHECK(r.errors[0].hook == "on_move");
  CHECK(r.errors[1].hook == "on_move_range");
  REQUIRE(r.prof->gc_begin(GcKind::kCopying).ok());
  const Address outside = r.heap.space().end() + 64;
  r.prof->on_move(r.at(0), outside);
  r.prof->on_free(outside);
  r.prof->on_move_range(r.at(0), r.at(kSlot), 8 * kSlot);  // its destination runs past the space's end
  r.prof->on_free_range(r.at(kSlot), 8 * kSlot);           // runs past the space's end
  r.prof->on_free_range(r.at(kSlot), 0);                    // a no-op, not an error
  REQUIRE(r.prof->gc_end().ok());
  REQUIRE(r.errors.size() == 6);
  CHECK(r.errors[2].hook == "on_move");
  CHECK(r.errors[3].hook == "on_free");
  CHECK(r.errors[4].hook == "on_move_range");
  CHECK(r.errors[5].hook == "on_free_range");
  CHECK(r.prof->stats().tracked_live == 1);  // nothing applied
  CHECK(r.prof->stats().moves == 0);
}

}  // namespace test_evacuation
