// ProfilerOptions::mark_on_alloc: an allocation marks its object in the current epoch, as its
// first barrier would, and in the mode that barrier marks in (mark_on_alloc_mode). Every mode
// must reach the harvest, with one space or several; the buffered mode's bits wait in the
// allocating thread's PendingMarks until it moves to another word or the GC begins; and the
// modes that promise to lose nothing must lose nothing when threads allocate neighbours in the
// same bitmap bytes at once.
#include <objprof/analysis/analyzer.h>
#include <objprof/analysis/object_metrics.h>
#include <objprof/barrier.h>
#include <objprof/profiler.h>

#include "test_support.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace test_alloc_marks {

using namespace objprof;
using objprof::test::ProfilerRig;

namespace {

constexpr MarkMode kModes[] = {MarkMode::kRacy, MarkMode::kAtomic, MarkMode::kAtomicTestFirst, MarkMode::kBuffered,
                               MarkMode::kRacyTestFirst};

}  // namespace

TEST_CASE("mark_on_alloc: an allocation marks its object in the current epoch, as its first barrier would",
          "[core][mark_on_alloc]") {
  for (bool marks : {false, true}) {
    INFO("mark_on_alloc " << marks);
    ProfilerRig r(1 << 16, [&](ProfilerOptions& o) { o.mark_on_alloc = marks; });
    r.prof->on_alloc(*r.thread, 1, 1, r.at(0), 64);
    r.prof->on_alloc(*r.thread, 1, 1, r.at(64), 64);  // the same bitmap word: both bits land
    r.gc();
    CHECK(r.prof->stats().bits_harvested == (marks ? 2u : 0u));
    r.gc();  // marks belong to the epoch of the allocation only
    CHECK(r.prof->stats().bits_harvested == (marks ? 2u : 0u));
    auto a = r.analyze();
    REQUIRE(a.objects.size() == 2);
    for (analysis::ObjectId o = 0; o < 2; ++o) {
      CHECK(a.objects.access_count(o) == (marks ? 1u : 0u));
      if (marks) CHECK(a.objects.last_access(o) == 0);
    }
    CHECK(r.errors.empty());
  }
}

TEST_CASE("mark_on_alloc_mode: every mode marks what was allocated, in one space or several",
          "[core][mark_on_alloc]") {
  for (MarkMode mode : kModes) {
    for (bool two_spaces : {false, true}) {
      INFO("mode " << mark_mode_name(mode) << ", two spaces " << two_spaces);
      test::FakeHeap heap(1 << 16), second(1 << 12);
      ProfilerOptions o;
      test::rig_defaults(o);
      o.mark_on_alloc = true;
      o.mark_on_alloc_mode = mode;
      std::vector<std::string> errors;
      o.on_protocol_error = [&](const ProtocolError& e) { errors.emplace_back(e.message); };
      auto created = Profiler::create(std::move(o));
      REQUIRE(created.ok());
      Profiler& prof = **created;
      REQUIRE(prof.add_space(heap.space()).ok());
      // A second space makes on_alloc look for the object's space (the path for several).
      if (two_spaces) REQUIRE(prof.add_space(second.space()).ok());
      ThreadState& thread = **prof.attach_thread(1, "main");
      auto gc = [&] {
        REQUIRE(prof.gc_begin(GcKind::kFull).ok());
        REQUIRE(prof.gc_end().ok());
      };
      const AccessBitmap& bitmap = prof.bitmap(0);
      // Offsets 0 and 64 share the bitmap's first word; 4096 is in its ninth.
      prof.on_alloc(thread, 1, 1, heap.at(0), 64);
      prof.on_alloc(thread, 1, 1, heap.at(64), 64);
      const bool buffered = mode == MarkMode::kBuffered;
      // A buffered mark waits in the thread's word until the thread moves to another word.
      CHECK(bitmap.test(heap.at(0)) == !buffered);
      CHECK(bitmap.test(heap.at(64)) == !buffered);
      prof.on_alloc(thread, 1, 1, heap.at(4096), 64);
      CHECK(bitmap.test(heap.at(0)));
      CHECK(bitmap.test(heap.at(64)));
      CHECK(bitmap.test(heap.at(4096)) == !buffered);
      CHECK_FALSE(bitmap.test(heap.at(128)));
      if (two_spaces) prof.on_alloc(thread, 1, 1, second.at(64), 64);
      gc();  // gc_begin merges what is still pending
      CHECK(prof.stats().bits_harvested == (two_spaces ? 4u : 3u));
      gc();
      CHECK(prof.stats().bits_harvested == (two_spaces ? 4u : 3u));  // one epoch only
      prof.detach_thread(thread);
      CHECK(errors.empty());
    }
  }
}

TEST_CASE("mark_on_alloc_mode: buffered allocation marks share the thread's pending word with its buffered barriers",
          "[core][mark_on_alloc]") {
  ProfilerRig r(1 << 16, [](ProfilerOptions& o) {
    o.mark_on_alloc = true;
    o.mark_on_alloc_mode = MarkMode::kBuffered;
  });
  using Buffered = BarrierPolicy<false, MarkMode::kBuffered>;
  const AccessBitmap& bitmap = r.prof->bitmap(0);
  // Allocations and barriers of one thread alternate in the bitmap's first word (granules 0,
  // 16, 8): one pending word holds all three, none lost to the other kind of mark.
  r.prof->on_alloc(*r.thread, 1, 1, r.at(0), 64);
  access<Buffered>(*r.thread, r.prof->barrier_descriptor(0), r.at(128));
  r.prof->on_alloc(*r.thread, 1, 1, r.at(64), 64);
  for (std::size_t off : {0, 64, 128}) CHECK_FALSE(bitmap.test(r.at(off)));
  // An allocation in another word merges the first one.
  r.prof->on_alloc(*r.thread, 1, 1, r.at(4096), 64);
  for (std::size_t off : {0, 64, 128}) CHECK(bitmap.test(r.at(off)));
  CHECK_FALSE(bitmap.test(r.at(4096)));
  access<Buffered>(*r.thread, r.prof->barrier_descriptor(0), r.at(4096 + 64));  // the same (new) word
  r.gc();
  CHECK(r.prof->stats().bits_harvested == 5u);
  CHECK(r.errors.empty());
}

TEST_CASE("mark_on_alloc_mode: a value that is no MarkMode is refused", "[core][mark_on_alloc]") {
  ProfilerOptions o;
  o.mark_on_alloc = true;
  o.mark_on_alloc_mode = static_cast<MarkMode>(200);
  auto p = Profiler::create(std::move(o));
  REQUIRE_FALSE(p.ok());
  CHECK(p.error().code == ErrorCode::kInvalidArgument);
  CHECK(p.error().message.find("mark_on_alloc_mode 200") != std::string::npos);
}

TEST_CASE("mark_on_alloc_mode: threads allocating neighbours at once lose no mark (racy is counted)",
          "[core][mark_on_alloc][marks]") {
  // Two threads allocate 16-byte objects in turn (even and odd), so both write every bitmap
  // byte of a small region; they start each round together from a spinning barrier, so they
  // run through the bytes side by side. Between rounds the first thread collects: everything
  // dies (one free range) and the harvest counts the round's marks.
  const unsigned threads = 2;
  const std::size_t per_thread = 1024;
  const std::size_t objects = per_thread * threads;
  const std::size_t rounds = test::scaled(200, 20);
  auto lost = [&](MarkMode mode) {
    ProfilerRig r(objects * 16, [&](ProfilerOptions& o) {
      o.mark_on_alloc = true;
      o.mark_on_alloc_mode = mode;
      o.check_hooks = false;  // the checker's lock would make the threads take turns
      o.trace_sink.reset();   // nor the trace: only the marks are asked about
      o.min_tracked_size = 1 << 20;
    });
    std::vector<ThreadState*> states;
    for (unsigned t = 0; t < threads; ++t) states.push_back(*r.prof->attach_thread(10 + t, "allocator"));
    std::atomic<std::size_t> arrived{0};
    auto wait_all = [&](std::size_t phase) {  // the phase-th meeting of all threads
      arrived.fetch_add(1);
      while (arrived.load() < phase * threads) std::this_thread::yield();
    };
    std::uint64_t lost_bits = 0;
    int failed_gcs = 0;
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        for (std::size_t round = 0; round < rounds; ++round) {
          wait_all(2 * round + 1);
          for (std::size_t i = 0; i < per_thread; ++i)
            r.prof->on_alloc(*states[t], 1, 1, r.at((i * threads + t) * 16), 16);
          wait_all(2 * round + 2);
          if (t != 0) continue;  // the others wait at the next round's start: a safepoint
          // No assertions on this thread (Catch2 v2 asserts from one thread): failures are counted.
          const std::uint64_t before = r.prof->stats().bits_harvested;
          if (!r.prof->gc_begin(GcKind::kFull).ok()) ++failed_gcs;
          r.prof->on_free_range(r.at(0), objects * 16);
          if (!r.prof->gc_end().ok()) ++failed_gcs;
          lost_bits += objects - (r.prof->stats().bits_harvested - before);
        }
      });
    for (auto& th : pool) th.join();
    for (ThreadState* s : states) r.prof->detach_thread(*s);
    CHECK(failed_gcs == 0);
    CHECK(r.errors.empty());
    return lost_bits;
  };
  for (MarkMode mode : {MarkMode::kAtomic, MarkMode::kAtomicTestFirst, MarkMode::kBuffered}) {
    INFO("mode " << mark_mode_name(mode));
    const std::uint64_t n = lost(mode);
    CHECK(n == 0);
  }
  // Racy may lose marks here; how many depends on the scheduler, so it is reported.
  const std::uint64_t racy = lost(MarkMode::kRacy);
  WARN("racy allocation marks lost " << racy << " of " << objects * rounds);
}

}  // namespace test_alloc_marks
