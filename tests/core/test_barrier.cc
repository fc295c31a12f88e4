#include "test_support.h"

#include <objprof/barrier.h>

#include <cstring>
#include <vector>

namespace test_barrier {

using namespace objprof;
using objprof::test::FakeHeap;

namespace {

struct Fixture {
  FakeHeap heap{1 << 16};
  std::unique_ptr<AccessBitmap> bitmap = std::move(*AccessBitmap::create(heap.space()));
  ThreadState thread{1, "main"};
};

// A random access sequence over `heap`: repeats of the previous address (cache hits), nulls,
// addresses just below the space, and the rest mostly in range (some above it).
std::vector<Address> access_sequence(const FakeHeap& heap, std::uint64_t x, int n) {
  std::vector<Address> seq;
  for (int i = 0; i < n; ++i) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    const Address a = i % 5 == 0 && !seq.empty() ? seq.back()                                   // cache hit
                      : i % 11 == 0              ? 0                                            // null
                      : i % 17 == 0              ? heap.space().begin() - 8 * (x % 4 + 1)       // below
                                                 : heap.space().begin() + x % 70000;            // mostly in range
    seq.push_back(a);
  }
  return seq;
}

// The addresses a harvest of `bm` finds marked (and clears).
std::vector<Address> harvest(AccessBitmap& bm) {
  auto snap = bm.snapshot_and_clear();
  REQUIRE(snap.ok());
  std::vector<Address> got;
  snap->for_each_marked([&](Address a) { got.push_back(a); });
  return got;
}

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

TEST_CASE("Barrier with no cache at all marks what the cacheless ThreadState barrier marks", "[core][barrier]") {
  FakeHeap heap(1 << 16);
  std::vector<Address> seq;
  std::uint64_t x = 0x2545F4914F6CDD1Dull;
  for (int i = 0; i < 4000; ++i) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    seq.push_back(i % 13 == 0 ? 0 : heap.space().begin() - 64 + x % 70000);  // null, below, in, above
  }
  for (MarkMode m : {MarkMode::kRacy, MarkMode::kRacyTestFirst, MarkMode::kAtomic, MarkMode::kAtomicTestFirst,
                     MarkMode::kBuffered}) {
    INFO("mark " << mark_mode_name(m));
    auto thread_bm = AccessBitmap::create(heap.space());
    auto bare_bm = AccessBitmap::create(heap.space());
    REQUIRE((thread_bm.ok() && bare_bm.ok()));
    ThreadState t(1, "t");
    with_barrier_policy(BarrierConfig{false, m, false}, [&](auto policy) {
      using P = decltype(policy);
      // The dispatch instantiates every combination; only the cacheless, uncounted one runs.
      if constexpr (!P::kCache && !P::kCount) {
        for (Address a : seq) {
          access<P>(t, **thread_bm, a);
          access<P>((*bare_bm)->descriptor(), a);
        }
      }
    });
    t.pending_marks.merge();  // buffered marks land in the bitmap at the epoch's end
    CHECK((*bare_bm)->count() > 0);
    CHECK((*bare_bm)->count() == (*thread_bm)->count());
    CHECK(std::memcmp((*thread_bm)->descriptor().bitmap.load(), (*bare_bm)->descriptor().bitmap.load(),
                      (*thread_bm)->size_bytes()) == 0);
  }
}

TEST_CASE("Every barrier variant marks the same granules as a reference model", "[core][barrier]") {
  // Differential: all 8 policies against a plain set of addresses, on one random sequence.
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
    return harvest(**bm);
  };
  CHECK(run(BarrierPolicy<true, MarkMode::kRacy>{}) == expected);
  CHECK(run(BarrierPolicy<true, MarkMode::kRacyTestFirst>{}) == expected);
  CHECK(run(BarrierPolicy<true, MarkMode::kAtomic>{}) == expected);
  CHECK(run(BarrierPolicy<true, MarkMode::kAtomicTestFirst>{}) == expected);
  CHECK(run(BarrierPolicy<false, MarkMode::kRacy>{}) == expected);
  CHECK(run(BarrierPolicy<false, MarkMode::kRacyTestFirst, true>{}) == expected);
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

namespace {
// A VM's own per-thread struct with objprof's cache slot (and counters) among its fields.
struct FakeVmThread {
  char pad[40];
  BarrierSlot slot;
  std::uint64_t vm_state = 0;
  BarrierCounters counters;
};
}  // namespace

TEST_CASE("Barrier on a BarrierSlot in the VM's thread struct equals the ThreadState barrier", "[core][barrier]") {
  FakeHeap heap(1 << 16);
  const std::vector<Address> seq = access_sequence(heap, 0x9E3779B97F4A7C15ull, 4000);
  for (bool cache : {false, true})
    for (MarkMode m : {MarkMode::kRacy, MarkMode::kRacyTestFirst, MarkMode::kAtomic, MarkMode::kAtomicTestFirst})
      for (bool count : {false, true}) {
        const BarrierConfig c{cache, m, count};
        INFO("cache " << cache << " mark " << mark_mode_name(m) << " count " << count);
        auto thread_bm = AccessBitmap::create(heap.space());
        auto vm_bm = AccessBitmap::create(heap.space());
        REQUIRE((thread_bm.ok() && vm_bm.ok()));
        ThreadState t(1, "t");
        FakeVmThread vm{};
        for (std::size_t i = 0; i < seq.size(); ++i) {
          if (i == seq.size() / 2) {  // a GC: both caches reset
            t.reset_cache();
            vm.slot.reset();
          }
          with_barrier_policy(c, [&](auto policy) {
            using P = decltype(policy);
            access<P>(t, **thread_bm, seq[i]);
            if constexpr (P::kCount) access<P>(vm.slot.cache, vm.counters, (*vm_bm)->descriptor(), seq[i]);
            else access<P>(vm.slot, (*vm_bm)->descriptor(), seq[i]);
          });
          REQUIRE(vm.slot.cache.load() == t.cache.load());
        }
        CHECK(std::memcmp((*thread_bm)->descriptor().bitmap.load(), (*vm_bm)->descriptor().bitmap.load(),
                          (*thread_bm)->size_bytes()) == 0);
        CHECK((*vm_bm)->count() > 0);
        CHECK(vm.counters.executed.load() == t.counters.executed.load());
        CHECK(vm.counters.cache_hits.load() == t.counters.cache_hits.load());
        CHECK(vm.counters.marks.load() == t.counters.marks.load());
        CHECK(vm.vm_state == 0);  // the VM's own fields are not touched
        for (char p : vm.pad) CHECK(p == 0);
      }
}

TEST_CASE("Barrier on a BarrierSpaceCopy marks what the descriptor barrier marks, across harvests", "[core][barrier]") {
  FakeHeap heap(1 << 16);
  const std::vector<Address> seq = access_sequence(heap, 0xD1B54A32D192ED03ull, 6000);
  // Each harvest's marks, as addresses: the copy's barrier against the descriptor's.
  for (int variant = 0; variant < 3; ++variant) {
    const bool cache = variant == 2;
    const bool test_first = variant == 1;  // objprof-Lua's table barrier
    INFO("cache " << cache << " test first " << test_first);
    auto desc_bm = AccessBitmap::create(heap.space());
    auto copy_bm = AccessBitmap::create(heap.space());
    REQUIRE((desc_bm.ok() && copy_bm.ok()));
    BarrierSlot desc_slot, copy_slot;
    BarrierSpaceCopy<3> copy;
    REQUIRE(copy.copy_from((*copy_bm)->descriptor()));
    std::size_t marked = 0;
    for (std::size_t i = 0; i < seq.size(); ++i) {
      if (i % 1500 == 1499) {  // a harvest swaps the active buffer: the copy must follow it
        const auto want = harvest(**desc_bm);
        CHECK(harvest(**copy_bm) == want);
        marked += want.size();
        REQUIRE(copy.copy_from((*copy_bm)->descriptor()));
        CHECK(copy.bitmap == (*copy_bm)->descriptor().bitmap.load());
        desc_slot.reset();
        copy_slot.reset();
      }
      if (cache) {
        access<DefaultBarrier>(desc_slot, (*desc_bm)->descriptor(), seq[i]);
        access<DefaultBarrier>(copy_slot, copy, seq[i]);
        REQUIRE(copy_slot.cache.load() == desc_slot.cache.load());
      } else if (test_first) {
        access<BarrierPolicy<false, MarkMode::kRacy>>((*desc_bm)->descriptor(), seq[i]);
        access<BarrierPolicy<false, MarkMode::kRacyTestFirst>>(copy, seq[i]);
      } else {
        using P = BarrierPolicy<false, MarkMode::kRacy>;
        access<P>((*desc_bm)->descriptor(), seq[i]);
        access<P>(copy, seq[i]);
      }
    }
    CHECK(harvest(**copy_bm) == harvest(**desc_bm));
    CHECK(marked > 1000);  // the sequence marks in every window
  }
}

TEST_CASE("A BarrierSpaceCopy of a space with another granule, or of an empty space, marks nothing", "[core][barrier]") {
  FakeHeap heap16(1 << 14, 16);
  auto bm = AccessBitmap::create(heap16.space());
  REQUIRE(bm.ok());
  BarrierSpaceCopy<3> copy;
  CHECK_FALSE(copy.copy_from((*bm)->descriptor()));  // 16-byte granules, a copy for 8-byte ones
  CHECK(copy.size == 0);
  CHECK(copy.bitmap == nullptr);
  BarrierSlot slot;
  for (std::size_t off = 0; off < (1u << 14); off += 16) access<DefaultBarrier>(slot, copy, heap16.at(off));
  CHECK(slot.cache.load() == 0);  // nothing is in range, so nothing enters the cache
  CHECK((*bm)->count() == 0);

  BarrierSpaceCopy<4> right;
  REQUIRE(right.copy_from((*bm)->descriptor()));
  access<DefaultBarrier>(slot, right, heap16.at(32));
  access<DefaultBarrier>(slot, right, heap16.at(32 + 8));  // the same 16-byte granule
  CHECK(slot.cache.load() == heap16.at(32 + 8));
  CHECK((*bm)->count() == 1);
  CHECK((*bm)->test(heap16.at(32)));
}

}  // namespace test_barrier
