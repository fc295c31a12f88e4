// The online leak detector against a reference model, on random runs: objects of mixed sizes
// (tracked and untracked side by side in the same 512-byte regions), random accesses, and
// collections that free, copy to the other semispace, or slide survivors down in place (a
// survivor's new address is often another object's old one). After every GC the profiler must
// report exactly the tracked objects the model finds stale: a move or free the profiler missed
// (e.g. dropped by its region filter) shows up as a wrong address, a dead object reported, or
// a live one reported at its old address.
// Some small objects grow past the threshold by a resize (a header with separately allocated
// parts, as a Lua table), so tracked objects can start a few bytes apart, closer than the
// threshold; some slides report runs of adjacent survivors as one range move, and some runs of
// adjacent dead objects die by one on_free_range.
#include "test_support.h"

#include <objprof/barrier.h>
#include <objprof/profiler.h>

#include <algorithm>
#include <map>
#include <unordered_map>
#include <memory>
#include <random>
#include <vector>

namespace test_stale_model {

using namespace objprof;
using objprof::test::FakeHeap;

namespace {

enum class Gc { kNonMoving, kCopying, kSliding };

struct ModelObject {
  Address addr;
  std::uint64_t size;
  bool tracked;
  std::uint64_t last_access;  // epoch; birth counts as an access
  bool reported = false;
};

// The collector's answers for report_survivors, from the model: every object alive before the
// GC, at its pre-GC address, mapped to its post-GC one (0: it died).
struct ModelSurvivors final : SurvivorOracle {
  std::unordered_map<Address, Address> fate;
  void survivors(std::span<const Address> pre_gc, std::span<Address> post_gc) const noexcept override {
    for (std::size_t i = 0; i < pre_gc.size(); ++i) {
      const auto it = fate.find(pre_gc[i]);
      post_gc[i] = it == fate.end() ? 0 : it->second;
    }
  }
};

struct Report {
  Address addr;
  std::uint64_t epoch, last_access;
  bool operator<(const Report& o) const { return addr < o.addr; }
  bool operator==(const Report& o) const = default;
};

// two_spaces: each half of the heap is a space of its own, so a copy moves every survivor into
// the other space (the tracker's multi-space paths: placing records by address, re-homing them).
// checks: the hook checks on (every hook's checked path) or off (with one space, the collector
// hooks' inline short paths: a bit test of the tracker's start bits per event).
// fates: how the tracker learns the fates (FateReports). Whatever it is, the model's collector
// reports each move and free only when the GC wants them (wants_object_events()), and answers
// report_survivors in every GC but with kHooks (a GC that takes the hooks' reports must ignore
// the answers).
void run_model(std::uint64_t seed, std::uint32_t k, bool two_spaces, bool checks, FateReports fates = FateReports::kHooks) {
  constexpr std::uint64_t kHalf = 256 << 10, kTracked = 256;
  FakeHeap heap(2 * kHalf);
  std::vector<Report> got;
  ProfilerOptions o;
  o.stale_after_epochs = k;
  o.stale_after_bytes = 0;  // GC_K alone: the epochs here are not a program's progress
  o.min_tracked_size = kTracked;
  o.default_leak_printer = false;
  o.check_hooks = checks;
  o.fate_reports = fates;
  o.on_leak = [&](const LeakReport& r) { got.push_back({r.addr, r.epoch, r.last_access_epoch}); };
  auto prof = std::move(*Profiler::create(std::move(o)));
  if (two_spaces) {
    for (std::uint64_t h = 0; h < 2; ++h) {
      const Address b = heap.space().begin() + h * kHalf;
      auto space = HeapSpace::make(b, b + kHalf, 8, h == 0 ? "half-0" : "half-1");
      REQUIRE(space.ok());
      REQUIRE(prof->add_space(*space).ok());
    }
  } else {
    REQUIRE(prof->add_space(heap.space()).ok());
  }
  REQUIRE(prof->define_type({1, "Obj", 0, false}).ok());
  REQUIRE(prof->define_site({1, 0, "model", 0}).ok());
  ThreadState& thread = **prof->attach_thread(1, "mutator");
  auto bitmap_of = [&](Address a) -> AccessBitmap& {
    return prof->bitmap(two_spaces && a >= heap.space().begin() + kHalf ? 1 : 0);
  };

  std::mt19937_64 rng(seed);
  const std::uint64_t sizes[] = {16, 32, 48, 64, 256, 272, 512, 1024};
  std::vector<ModelObject> live;
  std::uint64_t half = 0, bump = 0, survivor_gcs = 0;
  struct {
    std::uint64_t moves = 0, frees = 0, free_ranges = 0;
  } calls;  // the collector hooks called
  auto half_base = [&](std::uint64_t h) { return heap.space().begin() + h * kHalf; };

  const int epochs = static_cast<int>(test::scaled(60, 3));
  for (int round = 0; round < epochs; ++round) {
    const std::uint64_t e = prof->epoch();
    // Allocate.
    const int n = static_cast<int>(rng() % 24);
    // With kCheaper, some epochs allocate a burst of small objects, so that some GCs find the
    // tracked objects few beside the allocations and take the survivors' answers.
    const int burst = fates == FateReports::kCheaper && rng() % 3 == 0 ? static_cast<int>(400 + rng() % 400) : 0;
    for (int i = 0; i < n + burst; ++i) {
      const std::uint64_t size = i < n ? sizes[rng() % std::size(sizes)] : 16;
      if (bump + size > kHalf) break;
      const Address a = half_base(half) + bump;
      bump += size;
      prof->on_alloc(thread, 1, 1, a, size);
      live.push_back({a, size, size >= kTracked, e});
    }
    // A few small objects reach the tracking threshold by a resize: tracked from now on, with
    // this epoch as their birth.
    for (ModelObject& ob : live)
      if (!ob.tracked && rng() % 16 == 0) {
        prof->on_resize(thread, ob.addr, kTracked + 64 * (rng() % 4), 1, 1);
        ob.tracked = true;
        ob.last_access = e;
      }
    // Access about a third of the live objects.
    for (ModelObject& ob : live)
      if (rng() % 3 == 0) {
        access<>(thread, bitmap_of(ob.addr), ob.addr);
        ob.last_access = e;
      }
    // Collect.
    const Gc gc = static_cast<Gc>(rng() % 3);
    REQUIRE(prof->gc_begin(gc == Gc::kNonMoving ? GcKind::kFull : GcKind::kCopying).ok());
    const bool events = prof->wants_object_events();
    if (fates == FateReports::kHooks || checks) REQUIRE(events);
    if (fates == FateReports::kSurvivors && !checks) REQUIRE(!events);
    ModelSurvivors answers;
    for (const ModelObject& ob : live) answers.fate[ob.addr] = 0;
    // A quarter dies: runs of adjacent dead objects are reported with one on_free_range half
    // of the time, as a sweeper reports its dead cells.
    std::vector<ModelObject> survivors, dead;
    for (const ModelObject& ob : live) (rng() % 4 == 0 ? dead : survivors).push_back(ob);
    std::sort(dead.begin(), dead.end(), [](const auto& a, const auto& b) { return a.addr < b.addr; });
    for (std::size_t i = 0; i < dead.size();) {
      std::size_t j = i + 1;
      while (j < dead.size() && dead[j].addr == dead[j - 1].addr + dead[j - 1].size) ++j;
      if (j - i > 1 && rng() % 2 == 0) {
        if (events) {
          prof->on_free_range(dead[i].addr, dead[j - 1].addr + dead[j - 1].size - dead[i].addr);
          ++calls.free_ranges;
        }
      } else if (events) {
        for (std::size_t m = i; m < j; ++m) prof->on_free(dead[m].addr);
        calls.frees += j - i;
      }
      i = j;
    }
    if (gc == Gc::kCopying) {
      half ^= 1;
      bump = 0;
      std::shuffle(survivors.begin(), survivors.end(), rng);
      for (ModelObject& ob : survivors) {
        const Address to = half_base(half) + bump;
        bump += ob.size;
        if (events) {
          prof->on_move(ob.addr, to);
          ++calls.moves;
        }
        answers.fate[ob.addr] = to;
        ob.addr = to;
      }
    } else if (gc == Gc::kSliding) {
      // Survivors in address order slide down to the start of their half, one by one or, for
      // a run of survivors adjacent before the GC, as one range (half of the runs).
      std::sort(survivors.begin(), survivors.end(), [](const auto& a, const auto& b) { return a.addr < b.addr; });
      bump = 0;
      for (std::size_t i = 0; i < survivors.size();) {
        std::size_t j = i + 1;
        while (j < survivors.size() && survivors[j].addr == survivors[j - 1].addr + survivors[j - 1].size) ++j;
        const bool as_range = j - i > 1 && rng() % 2 == 0;
        const Address run_from = survivors[i].addr, run_to = half_base(half) + bump;
        std::uint64_t run_bytes = 0;
        for (std::size_t m = i; m < j; ++m) {
          ModelObject& ob = survivors[m];
          const Address to = half_base(half) + bump;
          bump += ob.size;
          run_bytes += ob.size;
          if (to != ob.addr && !as_range && events) {
            prof->on_move(ob.addr, to);
            ++calls.moves;
          }
          answers.fate[ob.addr] = to;
          ob.addr = to;
        }
        if (as_range && run_to != run_from && events) {
          prof->on_move_range(run_from, run_to, run_bytes);
          ++calls.moves;  // counted as one move, as ProfilerStats::moves does
        }
        i = j;
      }
    }
    if (gc == Gc::kNonMoving)
      for (const ModelObject& ob : survivors) answers.fate[ob.addr] = ob.addr;
    if (fates != FateReports::kHooks) prof->report_survivors(answers);
    survivor_gcs += !events;
    live = std::move(survivors);
    got.clear();
    REQUIRE(prof->gc_end().ok());
    // The model's reports of this GC: tracked, alive, not reported yet, idle for k epochs.
    std::vector<Report> want;
    for (ModelObject& ob : live)
      if (ob.tracked && !ob.reported && e - ob.last_access >= k) {
        ob.reported = true;
        want.push_back({ob.addr, e, ob.last_access});
      }
    std::sort(want.begin(), want.end());
    std::sort(got.begin(), got.end());
    INFO("seed " << seed << " epoch " << e << " gc " << static_cast<int>(gc));
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      INFO("report " << i);
      CHECK(got[i].addr == want[i].addr);
      CHECK(got[i].last_access == want[i].last_access);
      CHECK(got[i].epoch == want[i].epoch);
    }
  }
  std::uint64_t tracked_live = 0;
  for (const ModelObject& ob : live) tracked_live += ob.tracked;
  const ProfilerStats stats = prof->stats();
  CHECK(stats.tracked_live == tracked_live);
  // The model reuses no memory without a free and moves nothing onto a survivor.
  CHECK(stats.reused_starts == 0);
  // Every event counted, whichever path took it.
  CHECK(stats.moves == calls.moves);
  CHECK(stats.frees == calls.frees);
  CHECK(stats.free_ranges == calls.free_ranges);
  CHECK(stats.survivor_gcs == survivor_gcs);
  // Each way was taken where the test means it to be (the checks always want the hooks).
  if (fates == FateReports::kSurvivors && !checks) CHECK(survivor_gcs == static_cast<std::uint64_t>(epochs));
  if (fates == FateReports::kCheaper && !checks) {
    CHECK(survivor_gcs > 0);
    CHECK(survivor_gcs < static_cast<std::uint64_t>(epochs));
  }
  CHECK(prof->protocol_status().ok());
}

}  // namespace

TEST_CASE("Stale detection matches a reference model under random frees, copies and slides", "[core][profiler]") {
  const bool checks = GENERATE(true, false);
  INFO("hook checks " << checks);
  for (std::uint64_t seed = 1; seed <= 8; ++seed)
    for (std::uint32_t k : {1u, 3u}) run_model(seed, k, false, checks);
}

TEST_CASE("Stale detection matches the reference model with the fates from the collector's answers", "[core][profiler][single-threaded]") {
  const FateReports fates = GENERATE(FateReports::kSurvivors, FateReports::kCheaper);
  const bool checks = GENERATE(true, false);
  INFO("fates " << static_cast<int>(fates) << ", hook checks " << checks);
  for (std::uint64_t seed = 21; seed <= 28; ++seed)
    for (std::uint32_t k : {1u, 3u}) run_model(seed, k, false, checks, fates);
  for (std::uint64_t seed = 31; seed <= 34; ++seed) run_model(seed, 2, true, checks, fates);
}

TEST_CASE("Stale detection matches the reference model with each semispace a space of its own", "[core][profiler]") {
  const bool checks = GENERATE(true, false);
  INFO("hook checks " << checks);
  for (std::uint64_t seed = 11; seed <= 16; ++seed)
    for (std::uint32_t k : {1u, 3u}) run_model(seed, k, true, checks);
}

// A profiler for a runtime that breaks the hook protocol (no hook checks: it cannot tell), on
// `heap`, reporting its leaks into `got`: GC_K = 2 alone, objects of 256 bytes and more tracked,
// sites 1 and 2, type 1.
std::unique_ptr<Profiler> unchecked_profiler(FakeHeap& heap, std::vector<LeakReport>& got) {
  ProfilerOptions o;
  o.stale_after_epochs = 2;
  o.stale_after_bytes = 0;
  o.min_tracked_size = 256;
  o.default_leak_printer = false;
  o.check_hooks = false;
  o.on_leak = [&got](const LeakReport& r) { got.push_back(r); };
  auto prof = std::move(*Profiler::create(std::move(o)));
  REQUIRE(prof->add_space(heap.space()).ok());
  REQUIRE(prof->define_type({1, "Obj", 0, false}).ok());
  REQUIRE(prof->define_site({1, 0, "first", 0}).ok());
  REQUIRE(prof->define_site({2, 0, "second", 0}).ok());
  return prof;
}

// A runtime that reuses a tracked object's memory without reporting its free (a protocol
// violation the profiler cannot see without check_hooks): the object placed there later wins,
// and the one it replaced is neither reported nor tracked twice, whether the next GCs move it
// or not. The tracker finds the reuse through its start bits, without an index per GC.
TEST_CASE("Stale detection: memory reused without a free keeps only the newer object", "[core][profiler]") {
  for (bool moving : {false, true}) {
    INFO((moving ? "moving" : "non-moving") << " GCs after the reuse");
    FakeHeap heap(1 << 16);
    std::vector<LeakReport> got;
    auto prof = unchecked_profiler(heap, got);
    ThreadState& thread = **prof->attach_thread(1, "mutator");
    prof->on_alloc(thread, 1, 1, heap.at(0), 512);
    prof->on_alloc(thread, 1, 1, heap.at(4096), 512);  // a neighbour that stays honest
    REQUIRE(prof->gc_begin(GcKind::kFull).ok());
    REQUIRE(prof->gc_end().ok());  // epoch 0 ends
    prof->on_alloc(thread, 2, 1, heap.at(0), 1024);  // reuses the first object's memory
    Address at = heap.at(0);
    for (int gc = 0; gc < 4; ++gc) {  // epochs 1 to 4 end
      REQUIRE(prof->gc_begin(GcKind::kFull).ok());
      if (moving) {
        prof->on_move(at, at + 8192);
        at += 8192;
      }
      REQUIRE(prof->gc_end().ok());
    }
    CHECK(prof->stats().tracked_live == 2u);
    CHECK(prof->stats().reused_starts == 1u);  // the slip, counted once
    REQUIRE(got.size() == 2);
    std::sort(got.begin(), got.end(), [](const LeakReport& a, const LeakReport& b) { return a.site_id > b.site_id; });
    CHECK(got[0].site_id == 2u);
    CHECK(got[0].size == 1024u);
    CHECK(got[0].last_access_epoch == 1u);  // born in epoch 1
    // Where it was when found: the loop's GC ending epoch e had moved it e times.
    CHECK(got[0].addr == heap.at(0) + (moving ? 8192 * got[0].epoch : 0));
    CHECK(got[1].addr == heap.at(4096));
    CHECK(got[1].site_id == 1u);
  }
}

// A copying collector that moves an object onto a place another survivor holds after the GC (a
// runtime bug the hook checker reports; without it the profiler cannot tell). The moved
// records claim their new starts after the pass: a start claimed twice must be found there, so
// that the next GC keeps only the object that arrived last, as with reused memory above.
TEST_CASE("Stale detection: two survivors moved onto one place keep only the later one", "[core][profiler]") {
  const bool onto_stayer = GENERATE(false, true);  // onto one that stayed, or two moves onto one place
  INFO((onto_stayer ? "onto an object that stayed" : "two moves onto one place"));
  FakeHeap heap(1 << 16);
  std::vector<LeakReport> got;
  auto prof = unchecked_profiler(heap, got);
  ThreadState& thread = **prof->attach_thread(1, "mutator");
  prof->on_alloc(thread, 1, 1, heap.at(0), 512);
  prof->on_alloc(thread, 2, 1, heap.at(1024), 512);
  REQUIRE(prof->gc_begin(GcKind::kFull).ok());
  REQUIRE(prof->gc_end().ok());  // both tracked
  REQUIRE(prof->stats().tracked_live == 2u);
  REQUIRE(prof->gc_begin(GcKind::kFull).ok());
  if (!onto_stayer) prof->on_move(heap.at(0), heap.at(8192));  // the first arrives first...
  prof->on_move(heap.at(1024), onto_stayer ? heap.at(0) : heap.at(8192));  // ...the second last
  REQUIRE(prof->gc_end().ok());
  CHECK(prof->stats().reused_starts == 0u);  // found at the next GC
  REQUIRE(prof->gc_begin(GcKind::kFull).ok());  // this GC resolves the double claim
  REQUIRE(prof->gc_end().ok());
  CHECK(prof->stats().tracked_live == 1u);
  CHECK(prof->stats().reused_starts == 1u);
  CHECK(prof->stats().tracker_indexed_gcs >= 1u);
  for (int gc = 0; gc < 3; ++gc) {
    REQUIRE(prof->gc_begin(GcKind::kFull).ok());
    REQUIRE(prof->gc_end().ok());
  }
  REQUIRE(got.size() == 1);
  CHECK(got[0].site_id == 2u);  // the later arrival
  CHECK(got[0].addr == (onto_stayer ? heap.at(0) : heap.at(8192)));
}

}  // namespace test_stale_model
