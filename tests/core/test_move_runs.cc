// A copying collector's GC applied by its runs alone (StaleTracker::sweep_runs): the hooks log
// each range and lone move instead of carding its tracked objects, and gc_end finds each run's
// records as one slice of the records sorted by address. It must be indistinguishable from the
// GC applied the other ways: the same program with each death reported by on_free (which never
// takes the runs' pass) tracks the same objects and finds the same leaks at the same offsets.
#include <objprof/profiler.h>

#include "test_support.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <random>
#include <vector>

namespace test_move_runs {

using namespace objprof;

namespace {

// One space laid out as the sim's semispace heap: [half 0 | large objects | half 1]. Every
// object takes one slot; most are 1 KiB (tracked), some 64 bytes (not tracked).
constexpr std::size_t kSlot = 1024;
constexpr std::size_t kHalfSlots = 96;
constexpr std::size_t kLargeSlots = 24;
constexpr std::size_t kHalf = kSlot * kHalfSlots;
constexpr std::size_t kLarge = kSlot * kLargeSlots;
constexpr int kEpochs = 16;

enum class Deaths { kEach, kEvacuated };
enum class Order { kBySource, kByDestination };

struct Program {
  Order order = Order::kBySource;
  bool bump = true;           // new objects at the half's top (their records rise), else in random free slots
  bool two_threads = false;   // two allocating threads: two young vectors
  bool large_moves = false;   // a large object moves in each GC: never a GC for the runs
  bool checks = false;        // hook checks and a trace (the hooks' full paths)
};

struct Rig {
  test::FakeHeap heap{2 * kHalf + kLarge + 2 * kSlot};
  std::vector<LeakReport> leaks;
  std::vector<ProtocolError> errors;
  std::unique_ptr<Profiler> prof;
  ThreadState* threads[2] = {nullptr, nullptr};

  explicit Rig(bool checks) {
    ProfilerOptions o;
    test::rig_defaults(o);
    o.check_hooks = checks;
    if (checks) o.trace_sink = std::make_unique<MemorySink>();
    o.on_leak = [this](const LeakReport& r) { leaks.push_back(r); };
    o.on_protocol_error = [this](const ProtocolError& e) { errors.push_back(e); };
    prof = std::move(*Profiler::create(std::move(o)));
    REQUIRE(prof->add_space(heap.space()).ok());
    threads[0] = *prof->attach_thread(1, "main");
    threads[1] = *prof->attach_thread(2, "second");
  }
  // `times` copying GCs in which the collector reports nothing.
  void quiet_gcs(int times = 1) {
    for (int gc = 0; gc < times; ++gc) {
      REQUIRE(prof->gc_begin(GcKind::kCopying).ok());
      REQUIRE(prof->gc_end().ok());
    }
  }
  Address half(std::size_t h) const { return heap.at(h == 0 ? 0 : kHalf + kLarge); }
  Address large() const { return heap.at(kHalf); }
  Address wanderer(int place) const { return heap.at(2 * kHalf + kLarge + static_cast<std::size_t>(place) * kSlot); }
};

struct Object {
  std::uint64_t size = 0;  // 0: free
  std::uint32_t site = 0;
};

// A block of survivors next to each other in the from-half, copied next to each other.
struct Block {
  std::size_t from, to, count;
};

void run(Rig& r, const Program& p, Deaths deaths, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::mt19937_64 when(seed + 1000);  // where the free range goes among the moves: not the program
  std::vector<Object> half(kHalfSlots), large(kLargeSlots);
  std::size_t h = 0, top = 0;
  for (int epoch = 0; epoch < kEpochs; ++epoch) {
    const Address base = r.half(h);
    if (p.large_moves && epoch == 0) r.prof->on_alloc(*r.threads[0], 6, 6, r.wanderer(0), kSlot);
    // Allocations: most in the half (at its top, or anywhere free), some among the large objects.
    const int news = 20 + static_cast<int>(rng() % 20);
    for (int n = 0; n < news; ++n) {
      ThreadState& t = *r.threads[p.two_threads ? rng() % 2 : 0];
      Object o{rng() % 4 ? kSlot : 64, static_cast<std::uint32_t>(1 + rng() % 5)};
      if (epoch % 2 == 0 && rng() % 6 == 0) {  // odd epochs' records rise (no large object among them)
        const std::size_t s = rng() % kLargeSlots;
        if (large[s].size != 0) continue;
        large[s] = o;
        r.prof->on_alloc(t, o.site, static_cast<std::uint32_t>(o.size), r.large() + s * kSlot, o.size);
        continue;
      }
      std::size_t s = top;
      if (!p.bump) s = rng() % kHalfSlots;
      if (s >= kHalfSlots || half[s].size != 0) continue;
      if (p.bump) ++top;
      half[s] = o;
      r.prof->on_alloc(t, o.site, static_cast<std::uint32_t>(o.size), base + s * kSlot, o.size);
    }
    // Accesses: objects of site 1 are never touched (the leaks).
    for (std::size_t s = 0; s < kHalfSlots; ++s)
      if (half[s].size != 0 && half[s].site != 1 && rng() % 2) access(*r.threads[0], r.prof->barrier_descriptor(0), base + s * kSlot);
    for (std::size_t s = 0; s < kLargeSlots; ++s)
      if (large[s].size != 0 && large[s].site != 1 && rng() % 2)
        access(*r.threads[0], r.prof->barrier_descriptor(0), r.large() + s * kSlot);

    REQUIRE(r.prof->gc_begin(GcKind::kCopying).ok());
    // The half's survivors (3 in 4) in blocks of neighbours; the blocks land in the other half
    // in a random order.
    std::vector<Block> blocks;
    std::vector<std::size_t> dead;
    for (std::size_t s = 0; s < kHalfSlots; ++s) {
      if (half[s].size == 0) continue;
      if (rng() % 4 == 0) {
        dead.push_back(s);
        continue;
      }
      if (!blocks.empty() && blocks.back().from + blocks.back().count == s && rng() % 3 != 0) ++blocks.back().count;
      else blocks.push_back({s, 0, 1});
    }
    std::vector<std::size_t> placed(blocks.size());
    for (std::size_t i = 0; i < placed.size(); ++i) placed[i] = i;
    std::shuffle(placed.begin(), placed.end(), rng);
    std::size_t next = 0;
    for (std::size_t i : placed) {
      blocks[i].to = next;
      next += blocks[i].count;
    }
    if (p.order == Order::kByDestination)
      std::sort(blocks.begin(), blocks.end(), [](const Block& a, const Block& b) { return a.to < b.to; });
    const Address to_base = r.half(1 - h);
    std::vector<Object> next_half(kHalfSlots);
    const std::size_t range_at = when() % (blocks.size() + 1);
    for (std::size_t i = 0; i <= blocks.size(); ++i) {
      if (deaths == Deaths::kEvacuated && i == range_at) r.prof->on_free_range(base, kHalf);
      if (i == blocks.size()) break;
      const Block& b = blocks[i];
      if (b.count == 1) r.prof->on_move(base + b.from * kSlot, to_base + b.to * kSlot);
      else r.prof->on_move_range(base + b.from * kSlot, to_base + b.to * kSlot, b.count * kSlot);
      for (std::size_t k = 0; k < b.count; ++k) next_half[b.to + k] = half[b.from + k];
    }
    if (deaths == Deaths::kEach)
      for (std::size_t s : dead) r.prof->on_free(base + s * kSlot);
    // The large objects: 1 in 5 dies (on_free, whichever way the half's deaths go).
    for (std::size_t s = 0; s < kLargeSlots; ++s) {
      if (large[s].size == 0) continue;
      if (rng() % 5 == 0) {
        r.prof->on_free(r.large() + s * kSlot);
        large[s] = {};
      }
    }
    // With large_moves a tracked object beside the large ones moves at every GC, outside the
    // evacuated half, between two places of its own.
    if (p.large_moves) r.prof->on_move(r.wanderer(epoch % 2), r.wanderer(1 - epoch % 2));
    REQUIRE(r.prof->gc_end().ok());
    half.swap(next_half);
    h = 1 - h;
    top = next;
  }
}

// The same program with each death reported alone and with the evacuated half as one range.
void require_same(const Program& p, std::uint64_t seed, bool runs_expected) {
  Rig each(p.checks), range(p.checks);
  run(each, p, Deaths::kEach, seed);
  run(range, p, Deaths::kEvacuated, seed);
  CHECK(each.errors.empty());
  CHECK(range.errors.empty());
  const ProfilerStats a = each.prof->stats(), b = range.prof->stats();
  CHECK(a.moves == b.moves);
  CHECK(b.free_ranges == static_cast<std::uint64_t>(kEpochs));
  CHECK(a.tracked_live > 30);
  CHECK(a.reused_starts == 0);
  CHECK(b.reused_starts == 0);
  if (!p.checks) {  // the hooks' full paths log ranges, which the GCs that card take to the index
    CHECK(a.tracker_indexed_gcs == 0);
    CHECK(b.tracker_indexed_gcs == 0);
  }
  // Deaths reported one by one are never a GC for the runs; the evacuated half is, in most GCs
  // (the first GC of a new profiler, and after a GC that could not, the hooks card for a while).
  CHECK(a.tracker_run_gcs == 0);
  if (runs_expected) CHECK(b.tracker_run_gcs >= kEpochs / 2);
  else CHECK(b.tracker_run_gcs == 0);
  test::require_same_tracking(*each.prof, each.leaks, each.heap.space().begin(), *range.prof, range.leaks,
                              range.heap.space().begin());
}

}  // namespace

TEST_CASE("move runs: a copying GC applied by its runs tracks and finds the same as one applied by its deaths",
          "[core][profiler]") {
  for (Order order : {Order::kBySource, Order::kByDestination}) {
    for (bool checks : {false, true}) {
      for (std::uint64_t seed = 1; seed <= 6; ++seed) {
        INFO((order == Order::kBySource ? "by source" : "by destination") << (checks ? ", checks and a trace" : "")
                                                                          << ", seed " << seed);
        Program p;
        p.order = order;
        p.checks = checks;
        require_same(p, seed, true);
      }
    }
  }
}

TEST_CASE("move runs: records out of address order (two threads, allocation anywhere) are sorted first",
          "[core][profiler]") {
  for (bool bump : {true, false}) {
    for (std::uint64_t seed = 11; seed <= 16; ++seed) {
      INFO((bump ? "two threads at the top" : "two threads anywhere") << ", seed " << seed);
      Program p;
      p.bump = bump;
      p.two_threads = true;
      require_same(p, seed, true);
    }
  }
}

TEST_CASE("move runs: a GC that moves something outside the evacuated range is applied the other way",
          "[core][profiler]") {
  for (std::uint64_t seed = 21; seed <= 26; ++seed) {
    INFO("seed " << seed);
    Program p;
    p.large_moves = true;
    require_same(p, seed, false);
  }
}

TEST_CASE("move runs: two survivors moved onto one place keep only one, the one from the higher source",
          "[core][profiler]") {
  const bool higher_first = GENERATE(false, true);  // the order of the two reports does not matter
  INFO((higher_first ? "the higher source reported first" : "the lower source reported first"));
  Rig r(false);
  const test::FakeHeap& heap = r.heap;
  Profiler* prof = r.prof.get();
  ThreadState& thread = *r.threads[0];
  const std::vector<LeakReport>& got = r.leaks;
  prof->on_alloc(thread, 1, 1, heap.at(0), 1024);
  prof->on_alloc(thread, 2, 1, heap.at(2048), 1024);
  r.quiet_gcs();  // both tracked
  REQUIRE(prof->stats().tracked_live == 2u);
  REQUIRE(prof->gc_begin(GcKind::kCopying).ok());
  const Address onto = heap.at(16384);
  if (higher_first) prof->on_move(heap.at(2048), onto);
  prof->on_move(heap.at(0), onto);
  if (!higher_first) prof->on_move(heap.at(2048), onto);
  prof->on_free_range(heap.at(0), 8192);
  REQUIRE(prof->gc_end().ok());
  CHECK(prof->stats().tracker_run_gcs == 1u);
  CHECK(prof->stats().reused_starts == 0u);  // found at the next GC
  r.quiet_gcs();  // this GC resolves the double claim
  CHECK(prof->stats().tracked_live == 1u);
  CHECK(prof->stats().reused_starts == 1u);
  CHECK(prof->stats().tracker_indexed_gcs >= 1u);
  r.quiet_gcs(3);
  REQUIRE(got.size() == 1);
  CHECK(got[0].site_id == 2u);
  CHECK(got[0].addr == onto);
}

// A run's destinations are tested for starts once, before the run is written (sweep_runs): a
// range landing on a record of a range written before it is a double claim resolved at the next
// GC (the record from the higher source kept), and a range that only straddles another's record
// claims nothing twice, its GC keeping every record. One case has the claimed start deep inside a
// long range, where the test reads its words 16 at a time.
TEST_CASE("move runs: a range moved over another range's records", "[core][profiler]") {
  struct Object {
    std::size_t at;
    std::uint32_t site;
  };
  struct Range {
    std::size_t from, to, bytes;
  };
  struct Case {
    const char* name;
    std::vector<Object> objects;                               // 1 KiB each, at offsets
    std::vector<Range> ranges;                                 // reported in this order
    std::vector<std::pair<std::size_t, std::uint32_t>> kept;   // (offset, site) after the GCs
  };
  constexpr std::size_t d = 65536;  // the destinations' base; the evacuated range is [0, 32 KiB)
  const Case c = GENERATE_COPY(
      Case{"onto a record of the other range",
           {{0, 1}, {2048, 2}, {4096, 3}},
           {{0, d, 3072}, {4096, d + 2048, 1024}},
           {{d, 1}, {d + 2048, 3}}},
      Case{"across a record of the other range",
           {{0, 1}, {2048, 2}, {4096, 3}},
           {{0, d, 3072}, {4096, d + 1024, 2048}},
           {{d, 1}, {d + 1024, 3}, {d + 2048, 2}}},
      Case{"a long range onto a record deep inside it",
           {{0, 1}, {12288, 2}, {16384, 3}, {20480, 4}},
           {{0, d, 13312}, {16384, d + 8192, 12288}},
           {{d, 1}, {d + 8192, 3}, {d + 12288, 4}}});
  INFO(c.name);
  Rig r(false);
  const test::FakeHeap& heap = r.heap;
  Profiler* prof = r.prof.get();
  ThreadState& thread = *r.threads[0];
  for (const Object& o : c.objects) prof->on_alloc(thread, o.site, 1, heap.at(o.at), 1024);
  r.quiet_gcs();
  REQUIRE(prof->stats().tracked_live == c.objects.size());
  REQUIRE(prof->gc_begin(GcKind::kCopying).ok());
  for (const Range& m : c.ranges) prof->on_move_range(heap.at(m.from), heap.at(m.to), m.bytes);
  prof->on_free_range(heap.at(0), 32768);
  REQUIRE(prof->gc_end().ok());
  CHECK(prof->stats().tracker_run_gcs == 1u);
  r.quiet_gcs();
  const std::size_t claimed_twice = c.objects.size() - c.kept.size();
  CHECK(prof->stats().tracked_live == c.kept.size());
  CHECK(prof->stats().reused_starts == claimed_twice);
  if (claimed_twice != 0) CHECK(prof->stats().tracker_indexed_gcs >= 1u);  // the double claim resolved
  r.quiet_gcs(3);
  std::vector<std::pair<std::size_t, std::uint32_t>> leaks;
  for (const LeakReport& l : r.leaks) leaks.emplace_back(l.addr - heap.at(0), l.site_id);
  std::sort(leaks.begin(), leaks.end());
  CHECK(leaks == c.kept);
}

TEST_CASE("move runs: an object moved twice in one GC is not a GC for the runs", "[core][profiler]") {
  Rig r(false);
  const test::FakeHeap& heap = r.heap;
  Profiler* prof = r.prof.get();
  ThreadState& thread = *r.threads[0];
  prof->on_alloc(thread, 1, 1, heap.at(0), 1024);
  prof->on_alloc(thread, 2, 1, heap.at(1024), 1024);
  r.quiet_gcs();
  REQUIRE(prof->gc_begin(GcKind::kCopying).ok());
  // The range and a lone move both claim the object at 1024: the runs' sources overlap.
  prof->on_move_range(heap.at(0), heap.at(16384), 2048);
  prof->on_move(heap.at(1024), heap.at(32768));
  prof->on_free_range(heap.at(0), 8192);
  REQUIRE(prof->gc_end().ok());
  CHECK(prof->stats().tracker_run_gcs == 0u);
  CHECK(prof->stats().tracked_live == 2u);  // both live on, wherever the other way put them
}

}  // namespace test_move_runs
