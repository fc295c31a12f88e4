// Profiler::set_space_used / set_space_used_from: a runtime whose allocator carves its blocks
// from the top down (oneTBB's pool) tells the profiler the window that holds objects, and the
// harvests scan only it. The same random program run with the window and without it must find
// the same leaks, harvest the same marks and write traces the analyzer reads alike.
#include "test_support.h"

#include <objprof/analysis/analyzer.h>
#include <objprof/profiler.h>

#include <catch2/catch.hpp>

#include <random>
#include <vector>

namespace test_used_window {

using namespace objprof;
using objprof::test::ProfilerRig;

constexpr std::size_t kSlot = 1024;
constexpr std::size_t kSlots = 512;  // a 512 KiB space; objects come from its top down

// Objects of 1 KiB (tracked) and 64 bytes, one per slot, placed from the last slot down as a
// top-down allocator would; some touched each epoch (slots that are multiples of 5 never:
// leaks), some freed at each GC and their slots reused later. With `window`, the runtime keeps
// the window at [lowest slot used so far, the space's end).
void run_program(ProfilerRig& r, std::uint64_t seed, bool window) {
  std::mt19937_64 rng(seed);
  std::vector<bool> live(kSlots, false);
  std::size_t next = kSlots;  // the next fresh slot is next - 1
  if (window) r.prof->set_space_used_from(0, kSlots * kSlot);  // nothing yet
  for (int epoch = 0; epoch < 10; ++epoch) {
    for (int n = 0; n < 30 && next > 0; ++n) {
      --next;
      const std::uint64_t size = rng() % 2 ? 1024 : 64;
      if (window) r.prof->set_space_used_from(0, next * kSlot);  // before the object exists
      r.prof->on_alloc(*r.thread, static_cast<std::uint32_t>(1 + next % 3), static_cast<std::uint32_t>(size), r.at(next * kSlot), size);
      live[next] = true;
    }
    for (std::size_t s = next; s < kSlots; ++s)
      if (live[s] && s % 5 != 0 && rng() % 2) r.touch(s * kSlot);
    REQUIRE(r.prof->gc_begin(GcKind::kFull).ok());
    for (std::size_t s = next; s < kSlots; ++s)
      if (live[s] && s % 5 != 0 && rng() % 6 == 0) {
        r.prof->on_free(r.at(s * kSlot));
        live[s] = false;
      }
    REQUIRE(r.prof->gc_end().ok());
  }
}

}  // namespace test_used_window

using namespace test_used_window;

TEST_CASE("used window: the same leaks, marks and trace with a window as without", "[core][profiler][bitmap]") {
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    INFO("seed " << seed);
    ProfilerRig all(kSlots * kSlot), windowed(kSlots * kSlot);
    run_program(all, seed, false);
    run_program(windowed, seed, true);
    CHECK(all.errors.empty());
    CHECK(windowed.errors.empty());
    CHECK(windowed.prof->bitmap(0).used_from_byte() > 0);  // the window did not reach the bottom
    const ProfilerStats a = all.prof->stats(), w = windowed.prof->stats();
    CHECK(a.bits_harvested > 100);
    CHECK(a.bits_harvested == w.bits_harvested);
    CHECK(a.objects_tracked == w.objects_tracked);
    CHECK(a.leaks_reported == w.leaks_reported);
    test::require_same_leaks(all.leaks, all.heap.space().begin(), windowed.leaks, windowed.heap.space().begin());
    const analysis::TraceAnalysis ta = all.analyze(), tw = windowed.analyze();
    REQUIRE(ta.objects.size() == tw.objects.size());
    for (analysis::ObjectId o = 0; o < ta.objects.size(); ++o) {
      CHECK(ta.objects.accessed(o) == tw.objects.accessed(o));
      CHECK(ta.objects.alive(o) == tw.objects.alive(o));
    }
  }
}

TEST_CASE("used window: with hook checks, marks outside it are a protocol error and are dropped", "[core][protocol][bitmap]") {
  ProfilerRig r(kSlots * kSlot);  // hook checks on (the rigs' default)
  r.prof->set_space_used(0, kSlots * kSlot);
  r.prof->set_space_used_from(0, 256 * kSlot);
  r.prof->on_alloc(*r.thread, 1, 1024, r.at(300 * kSlot), 1024);
  r.touch(300 * kSlot);
  r.touch(10 * kSlot);  // no object declared there: below the window
  r.gc();
  REQUIRE(r.messages.size() == 1);
  CHECK(r.messages[0].find("1 marked granules of space 0 lie outside the window") != std::string::npos);
  CHECK(r.prof->stats().bits_harvested == 1);  // the object's mark alone
  // The stray mark is gone: the buffer came back clean, and the next harvests see nothing.
  r.gc();
  r.gc();
  CHECK(r.messages.size() == 1);
  CHECK(r.prof->stats().bits_harvested == 1);
}
