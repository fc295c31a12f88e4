// Minor collections do not prove an old object reachable (a generational collector leaves old
// garbage for its next full collection), so staleness needs a full collection after the last
// access as well as GC_K idle epochs.
#include <objprof/profiler.h>

#include "test_support.h"

#include <catch2/catch.hpp>

#include <vector>

namespace test_minor_gc {

using namespace objprof;
using objprof::test::FakeHeap;

TEST_CASE("minor GCs alone never make an object a possible leak", "[core][stale]") {
  FakeHeap heap(1 << 16);
  std::vector<LeakReport> leaks;
  ProfilerOptions o;
  o.check_hooks = true;
  o.stale_after_epochs = 2;
  o.stale_after_bytes = 0;  // GC_K alone: the epochs here are not a program's progress
  o.min_tracked_size = 64;
  o.default_leak_printer = false;
  o.on_leak = [&](const LeakReport& r) { leaks.push_back(r); };
  auto prof = std::move(*Profiler::create(std::move(o)));
  REQUIRE(prof->add_space(heap.space()).ok());
  ThreadState* t = *prof->attach_thread(1, "main");
  prof->on_alloc(*t, 1, 1, heap.at(0), 128);
  auto gc = [&](GcKind kind) {
    REQUIRE(prof->gc_begin(kind).ok());
    REQUIRE(prof->gc_end().ok());
  };
  for (int i = 0; i < 6; ++i) gc(GcKind::kMinor);
  CHECK(leaks.empty());  // idle for 6 epochs, but nothing examined the old generation
  CHECK(prof->possible_leaks().empty());
  gc(GcKind::kFull);  // a full collection leaves it alive: now it is a possible leak
  REQUIRE(leaks.size() == 1);
  CHECK(leaks[0].addr == heap.at(0));
  CHECK(prof->possible_leaks().size() == 1);

  prof->on_alloc(*t, 1, 1, heap.at(1024), 128);  // born in epoch 7, after the full GC of epoch 6
  for (int i = 0; i < 4; ++i) gc(GcKind::kMinor);
  CHECK(leaks.size() == 1);
  gc(GcKind::kConcurrent);   // any collection that is not minor counts as full
  CHECK(leaks.size() == 2);
}

}  // namespace test_minor_gc
