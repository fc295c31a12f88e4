// Mark modes under contention: threads that mark granules of the same bitmap words at once.
// The racy mode may lose bits (it is a plain load, or, store of a shared byte); the atomic
// and the buffered modes must lose none. And the buffered mode's pending bits reach the
// harvest: gc_begin merges every thread's, detach_thread the leaving thread's.
#include "test_support.h"

#include <objprof/access_bitmap.h>
#include <objprof/barrier.h>
#include <objprof/thread_state.h>

#include <algorithm>
#include <barrier>
#include <random>
#include <thread>
#include <vector>

namespace test_mark_modes {

using namespace objprof;
using objprof::test::ProfilerRig;

namespace {

constexpr Address kBase = Address{1} << 32;  // never dereferenced: the bitmap only needs the range

std::unique_ptr<AccessBitmap> make_bitmap(std::size_t heap_bytes, Address begin = kBase) {
  auto space = HeapSpace::make(begin, begin + heap_bytes, 8, "contended");
  REQUIRE(space.ok());
  auto bm = AccessBitmap::create(*space);
  REQUIRE(bm.ok());
  return std::move(*bm);
}

// `threads` threads mark every granule of a heap of `words` bitmap words, interleaved (thread
// t marks granules t, t + threads, ...: every byte and word is shared), in a shuffled order of
// words, all starting together, `rounds` times on a fresh bitmap each. Returns the bits lost.
template <MarkMode Mode>
std::uint64_t lost_bits(unsigned threads, std::size_t words, unsigned rounds) {
  using Policy = BarrierPolicy<false, Mode>;
  const std::uint64_t granules = words * 64;
  std::uint64_t lost = 0;
  for (unsigned r = 0; r < rounds; ++r) {
    auto bm = make_bitmap(granules * 8);
    std::barrier start(static_cast<std::ptrdiff_t>(threads));
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        ThreadState self(t + 1, "marker");
        std::vector<std::size_t> order(words);
        for (std::size_t w = 0; w < words; ++w) order[w] = w;
        std::shuffle(order.begin(), order.end(), std::mt19937_64(r * 97 + t % 2));  // pairs collide
        start.arrive_and_wait();
        for (std::size_t w : order)
          for (std::uint64_t g = w * 64 + t; g < (w + 1) * 64; g += threads)
            access<Policy>(self, bm->descriptor(), kBase + g * 8);
        self.pending_marks.merge();  // what detach_thread / gc_begin do
      });
    }
    for (auto& th : pool) th.join();
    lost += granules - bm->count();
  }
  return lost;
}

}  // namespace

TEST_CASE("Mark modes: the buffered mode marks exactly what a thread touched, across words and spaces",
          "[core][barrier][marks]") {
  auto a = make_bitmap(1 << 20);
  auto b = make_bitmap(1 << 16, kBase + (1 << 21));
  auto ref_a = make_bitmap(1 << 20);
  auto ref_b = make_bitmap(1 << 16, kBase + (1 << 21));
  ThreadState buffered(1, "buffered"), racy(2, "racy");
  std::mt19937_64 rng(5);
  for (int i = 0; i < 20000; ++i) {
    // Runs within a word, jumps between words and between the two spaces, repeats.
    const bool in_b = rng() % 4 == 0;
    const Address base = in_b ? b->space().begin() : kBase;
    const std::uint64_t span = in_b ? (1 << 16) / 8 : (1 << 20) / 8;
    const Address obj = base + (rng() % 8 == 0 ? (rng() % span) : (rng() % 256)) * 8;
    access<BarrierPolicy<true, MarkMode::kBuffered>>(buffered, (in_b ? *b : *a).descriptor(), obj);
    access<BarrierPolicy<true, MarkMode::kRacy>>(racy, (in_b ? *ref_b : *ref_a).descriptor(), obj);
  }
  // Before the merge, at most one word of marks is pending.
  const std::uint64_t pending = static_cast<std::uint64_t>(std::popcount(buffered.pending_marks.bits.load()));
  CHECK(a->count() + b->count() + pending >= ref_a->count() + ref_b->count());
  CHECK(a->count() + b->count() <= ref_a->count() + ref_b->count());
  buffered.pending_marks.merge();
  CHECK(buffered.pending_marks.word.load() == nullptr);
  CHECK(a->count() == ref_a->count());
  CHECK(b->count() == ref_b->count());
  for (std::uint64_t g = 0; g < (1 << 20) / 8; ++g) {
    if (a->test(kBase + g * 8) != ref_a->test(kBase + g * 8)) FAIL("granule " << g << " differs");
  }
}

TEST_CASE("Mark modes: under contention atomic and buffered marks lose nothing (racy is counted)",
          "[core][barrier][marks]") {
  const unsigned threads = 4;
  const std::size_t words = test::scaled(1 << 14, 64);
  const unsigned rounds = static_cast<unsigned>(test::scaled(8, 8));
  CHECK(lost_bits<MarkMode::kAtomic>(threads, words, rounds) == 0);
  CHECK(lost_bits<MarkMode::kBuffered>(threads, words, rounds) == 0);
  // Racy may lose bits here; how many depends on the scheduler, so it is reported, not
  // asserted (bench_barrier's contention benchmark counts it too).
  WARN("racy mode lost " << lost_bits<MarkMode::kRacy>(threads, words, rounds) << " of "
                         << words * 64 * rounds << " bits");
}

TEST_CASE("Mark modes: buffered marks still pending at gc_begin and detach_thread reach the harvest",
          "[core][barrier][marks]") {
  ProfilerRig r(1 << 16);
  REQUIRE(r.prof->define_type({1, "Blob", 1024, false}).ok());
  REQUIRE(r.prof->define_site({1, 0, "Blob.make", 1}).ok());
  using Buffered = BarrierPolicy<true, MarkMode::kBuffered>;
  for (std::size_t off : {0, 4096, 8192, 12288}) r.prof->on_alloc(*r.thread, 1, 1, r.at(off), 1024);
  ThreadState* other = *r.prof->attach_thread(2, "worker");
  for (int gc = 0; gc < 4; ++gc) {
    // 0 then 4096: the mark of 0 is merged when the thread moves on; 4096's is still pending
    // when the GC begins.
    access<Buffered>(*r.thread, r.prof->barrier_descriptor(0), r.at(0));
    access<Buffered>(*r.thread, r.prof->barrier_descriptor(0), r.at(4096));
    if (gc == 0) {
      access<Buffered>(*other, r.prof->barrier_descriptor(0), r.at(8192));  // pending...
      r.prof->detach_thread(*other);                                       // ...merged here
    }
    r.gc();
  }
  CHECK(r.errors.empty());
  // GC_K = 2: only 12288 (never touched) and 8192 (touched in epoch 0 only) are stale.
  std::vector<Address> stale;
  for (const LeakReport& l : r.leaks) stale.push_back(l.addr);
  std::sort(stale.begin(), stale.end());
  stale.erase(std::unique(stale.begin(), stale.end()), stale.end());
  CHECK(stale == std::vector<Address>{r.at(8192), r.at(12288)});
  const analysis::TraceAnalysis a = r.analyze();
  // The trace's bitmaps show 4096 accessed in every epoch (its mark was pending each time).
  bool found = false;
  for (std::uint32_t o = 0; o < a.objects.size(); ++o) {
    if (a.objects.birth_addr(o) != r.at(4096)) continue;
    found = true;
    CHECK(a.objects.last_access(o) == 3);
    CHECK(a.objects.access_count(o) == 4);
  }
  CHECK(found);
}

}  // namespace test_mark_modes
