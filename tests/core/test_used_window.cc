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
    test::require_same_tracking(all, windowed);
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

namespace test_used_window {

// Profiler::set_space_window: a semispace collector moves the window to the half it copied into
// (inside the GC bracket). Objects of 1 KiB (tracked) and 64 bytes alternate halves of a
// 512-slot space at every GC, as a copying collector's survivors do; some are touched, some
// die. With `window` the collector narrows the window to the half the survivors went to; the
// same program without it must find the same leaks and harvest the same marks.
void run_semispace(ProfilerRig& r, std::uint64_t seed, bool window) {
  constexpr std::size_t kHalf = kSlots / 2;
  std::mt19937_64 rng(seed);
  std::vector<std::uint64_t> size(kHalf, 0);  // per slot of the current half; 0 = free
  std::size_t half = 0;
  if (window) {  // before any object: the first half
    r.prof->set_space_used_from(0, 0);
    r.prof->set_space_used(0, kHalf * kSlot);
  }
  for (int epoch = 0; epoch < 12; ++epoch) {
    const std::size_t base = half * kHalf;
    for (std::size_t s = 0; s < kHalf; ++s) {
      if (size[s] == 0 && rng() % 3 == 0) {
        size[s] = rng() % 2 ? 1024 : 64;
        r.prof->on_alloc(*r.thread, static_cast<std::uint32_t>(1 + s % 3), 1, r.at((base + s) * kSlot), size[s]);
      }
      if (size[s] != 0 && s % 5 != 0 && rng() % 2) r.touch((base + s) * kSlot);
    }
    REQUIRE(r.prof->gc_begin(GcKind::kCopying).ok());
    const std::size_t to = (1 - half) * kHalf;
    std::vector<std::uint64_t> next(kHalf, 0);
    std::size_t n = 0;
    for (std::size_t s = 0; s < kHalf; ++s) {
      if (size[s] == 0) continue;
      if (s % 5 != 0 && rng() % 4 == 0) continue;  // dies with the half
      r.prof->on_move(r.at((base + s) * kSlot), r.at((to + n) * kSlot));
      next[n++] = size[s];
    }
    r.prof->on_free_range(r.at(base * kSlot), kHalf * kSlot);
    if (window) REQUIRE(r.prof->set_space_window(0, to * kSlot, (to + kHalf) * kSlot).ok());
    REQUIRE(r.prof->gc_end().ok());
    size.swap(next);
    half = 1 - half;
  }
}

}  // namespace test_used_window

TEST_CASE("used window: a semispace collector's window follows the half it copied into", "[core][profiler][bitmap]") {
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    INFO("seed " << seed);
    ProfilerRig all(kSlots * kSlot), windowed(kSlots * kSlot);
    run_semispace(all, seed, false);
    run_semispace(windowed, seed, true);
    CHECK(all.errors.empty());
    CHECK(windowed.errors.empty());  // no mark outside the window (the checks would say)
    // The window is the half of the last copy: the first or the second.
    const AccessBitmap& b = windowed.prof->bitmap(0);
    CHECK(b.used_bytes() - b.used_from_byte() == b.size_bytes() / 2);
    const ProfilerStats a = all.prof->stats(), w = windowed.prof->stats();
    CHECK(a.bits_harvested > 100);
    CHECK(a.bits_harvested == w.bits_harvested);
    CHECK(a.leaks_reported > 0);
    test::require_same_tracking(all, windowed);
  }
}

TEST_CASE("used window: set_space_window narrows the harvest, and a mark outside it is reported", "[core][protocol][bitmap]") {
  ProfilerRig r(kSlots * kSlot);  // hook checks on (the rigs' default)
  r.prof->on_alloc(*r.thread, 1, 1024, r.at(10 * kSlot), 1024);
  r.prof->on_alloc(*r.thread, 1, 1024, r.at(300 * kSlot), 1024);
  // Outside a bracket the window cannot move; bad spaces and ranges are refused.
  CHECK(r.prof->set_space_window(0, 0, kSlot).error().code == ErrorCode::kProtocol);
  REQUIRE(r.prof->gc_begin(GcKind::kFull).ok());
  CHECK(r.prof->set_space_window(1, 0, kSlot).error().code == ErrorCode::kInvalidArgument);
  CHECK(r.prof->set_space_window(0, 2 * kSlot, kSlot).error().code == ErrorCode::kInvalidArgument);
  CHECK(r.prof->set_space_window(0, 0, kSlots * kSlot + 8).error().code == ErrorCode::kInvalidArgument);
  REQUIRE(r.prof->set_space_window(0, 256 * kSlot, kSlots * kSlot).ok());  // narrowed to the top half
  REQUIRE(r.prof->gc_end().ok());
  const AccessBitmap& b = r.prof->bitmap(0);
  CHECK(b.used_from_byte() == 256 * kSlot / 64);
  CHECK(b.used_bytes() == b.size_bytes());
  r.touch(300 * kSlot);
  r.touch(10 * kSlot);  // below the new window: the runtime broke its word
  r.gc();
  REQUIRE(r.messages.size() == 1);
  CHECK(r.messages[0].find("1 marked granules of space 0 lie outside the window") != std::string::npos);
  CHECK(r.prof->stats().bits_harvested == 1);
  // Moved back down (and narrowed below): the object at slot 10 is harvested again, the one
  // at 300 is outside now.
  REQUIRE(r.prof->gc_begin(GcKind::kFull).ok());
  REQUIRE(r.prof->set_space_window(0, 0, 256 * kSlot).ok());
  REQUIRE(r.prof->gc_end().ok());
  CHECK(b.used_from_byte() == 0);
  CHECK(b.used_bytes() == 256 * kSlot / 64);
  r.touch(10 * kSlot);
  r.gc();
  CHECK(r.messages.size() == 1);
  CHECK(r.prof->stats().bits_harvested == 2);
  // set_space_used widens it again from there.
  r.prof->set_space_used(0, kSlots * kSlot);
  CHECK(b.used_bytes() == b.size_bytes());
}
