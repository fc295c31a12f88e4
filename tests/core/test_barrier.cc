#include "test_support.h"

#include <objprof/barrier.h>

using namespace objprof;
using objprof::test::FakeHeap;

namespace {

struct Fixture {
  FakeHeap heap{1 << 16};
  std::unique_ptr<AccessBitmap> bitmap = std::move(*AccessBitmap::create(heap.space()));
  ThreadState thread{1, "main"};
};

}  // namespace

TEST_CASE("Barrier marks in-range objects and ignores null and out-of-range ones", "[core][barrier]") {
  Fixture f;
  using P = BarrierPolicy<true, MarkMode::kRacy, true>;
  access<P>(f.thread, *f.bitmap, 0);                                // null
  access<P>(f.thread, *f.bitmap, f.heap.space().begin() - 8);       // just below
  access<P>(f.thread, *f.bitmap, f.heap.space().end());             // just above
  CHECK(f.bitmap->count() == 0);
  CHECK(f.thread.cache.load() == 0);  // out-of-range objects never enter the cache
  CHECK(f.thread.counters.executed.load() == 3);
  CHECK(f.thread.counters.marks.load() == 0);

  access<P>(f.thread, *f.bitmap, f.heap.at(0));
  access<P>(f.thread, *f.bitmap, f.heap.space().end() - 8);
  CHECK(f.bitmap->test(f.heap.at(0)));
  CHECK(f.bitmap->test(f.heap.space().end() - 8));
  CHECK(f.bitmap->count() == 2);
  CHECK(f.thread.counters.marks.load() == 2);
}

TEST_CASE("Barrier skips an object equal to the cache and updates the cache otherwise", "[core][barrier]") {
  Fixture f;
  using P = BarrierPolicy<true, MarkMode::kRacy, true>;
  const Address a = f.heap.at(64), b = f.heap.at(128);
  access<P>(f.thread, *f.bitmap, a);
  CHECK(f.thread.cache.load() == a);
  access<P>(f.thread, *f.bitmap, a);
  access<P>(f.thread, *f.bitmap, a);
  CHECK(f.thread.counters.cache_hits.load() == 2);
  CHECK(f.thread.counters.marks.load() == 1);
  access<P>(f.thread, *f.bitmap, b);
  CHECK(f.thread.cache.load() == b);
  CHECK(f.thread.counters.marks.load() == 2);

  // The cache hides repeats: after a snapshot clears the bitmap, a cached object is not
  // marked again until the cache is reset. This is why the profiler resets caches at GC.
  auto snap = f.bitmap->snapshot_and_clear();
  REQUIRE(snap.ok());
  access<P>(f.thread, *f.bitmap, b);
  CHECK_FALSE(f.bitmap->test(b));
  f.thread.reset_cache();
  access<P>(f.thread, *f.bitmap, b);
  CHECK(f.bitmap->test(b));
}

TEST_CASE("Barrier without cache marks on every access", "[core][barrier]") {
  Fixture f;
  using P = BarrierPolicy<false, MarkMode::kAtomic, true>;
  const Address a = f.heap.at(8);
  for (int i = 0; i < 5; ++i) access<P>(f.thread, *f.bitmap, a);
  CHECK(f.thread.counters.marks.load() == 5);
  CHECK(f.thread.counters.cache_hits.load() == 0);
  CHECK(f.thread.cache.load() == 0);
  CHECK(f.bitmap->test(a));
}

TEST_CASE("Every barrier variant marks the same granules as a reference model", "[core][barrier]") {
  // Differential: all 6 policies against a plain set of addresses, on one random sequence.
  std::vector<std::size_t> offsets;
  std::uint64_t x = 88172645463325252ull;
  for (int i = 0; i < 5000; ++i) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    // Mostly in range, some repeats, some out of range.
    offsets.push_back((i % 7 == 0) ? offsets.empty() ? 0 : offsets.back() : static_cast<std::size_t>(x % (70000)) & ~std::size_t{7});
  }
  FakeHeap heap(1 << 16);
  std::vector<Address> expected;
  for (auto off : offsets)
    if (off < (1u << 16)) expected.push_back(heap.at(off));
  std::sort(expected.begin(), expected.end());
  expected.erase(std::unique(expected.begin(), expected.end()), expected.end());

  auto run = [&](auto policy) {
    using P = decltype(policy);
    auto bm = AccessBitmap::create(heap.space());
    REQUIRE(bm.ok());
    ThreadState t(1, "t");
    for (auto off : offsets) access<P>(t, **bm, heap.space().begin() + off);
    auto snap = (*bm)->snapshot_and_clear();
    REQUIRE(snap.ok());
    std::vector<Address> got;
    snap->for_each_marked([&](Address a) { got.push_back(a); });
    return got;
  };
  CHECK(run(BarrierPolicy<true, MarkMode::kRacy>{}) == expected);
  CHECK(run(BarrierPolicy<true, MarkMode::kAtomic>{}) == expected);
  CHECK(run(BarrierPolicy<true, MarkMode::kAtomicTestFirst>{}) == expected);
  CHECK(run(BarrierPolicy<false, MarkMode::kRacy>{}) == expected);
  CHECK(run(BarrierPolicy<false, MarkMode::kAtomic>{}) == expected);
  CHECK(run(BarrierPolicy<false, MarkMode::kAtomicTestFirst, true>{}) == expected);
}

TEST_CASE("with_barrier_policy dispatches to the configured variant", "[core][barrier]") {
  Fixture f;
  const Address a = f.heap.at(8);
  BarrierConfig c{false, MarkMode::kAtomic, true};
  for (int i = 0; i < 3; ++i)
    with_barrier_policy(c, [&](auto p) { access<decltype(p)>(f.thread, *f.bitmap, a); });
  CHECK(f.thread.counters.marks.load() == 3);  // no cache: every access marks
  c.cache = true;
  for (int i = 0; i < 3; ++i)
    with_barrier_policy(c, [&](auto p) { access<decltype(p)>(f.thread, *f.bitmap, a); });
  CHECK(f.thread.counters.marks.load() == 4);
  CHECK(f.thread.counters.cache_hits.load() == 2);
}
