// on_resize: an object whose footprint grows after allocation (a Lua table's array and hash
// parts, a growing buffer) is ranked by what it holds, online and offline.
#include <objprof/analysis/analyzer.h>
#include <objprof/analysis/object_metrics.h>
#include <objprof/barrier.h>
#include <objprof/profiler.h>
#include <objprof/trace_reader.h>

#include "test_support.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

namespace test_resize {

using namespace objprof;
using objprof::test::ProfilerRig;

namespace {

constexpr std::uint32_t kAllocSite = 1, kGrowSite = 2, kTable = 5;

struct ResizeRig : ProfilerRig {
  ResizeRig() : ProfilerRig(1 << 16) {
    REQUIRE(prof->define_type({kTable, "table", 56, false}).ok());
    REQUIRE(prof->define_site({kAllocSite, 0, "main.lua:3", 3}).ok());
    REQUIRE(prof->define_site({kGrowSite, 0, "main.lua:9", 9}).ok());
  }
};

}  // namespace

TEST_CASE("resize: a small object that grows past the threshold is tracked from then on", "[core][resize]") {
  ResizeRig r;
  r.prof->on_alloc(*r.thread, kAllocSite, kTable, r.heap.at(0), 56);     // too small to track
  r.prof->on_alloc(*r.thread, kAllocSite, kTable, r.heap.at(256), 56);   // stays small
  r.gc();
  CHECK(r.prof->stats().tracked_live == 0);
  r.prof->on_resize(*r.thread, r.heap.at(0), 56 + 4096, kGrowSite, kTable);  // now it holds 4 KiB
  r.prof->on_resize(*r.thread, r.heap.at(256), 56 + 64, kGrowSite, kTable);
  r.gc();  // epoch 1 ends: tracked, born (resized) in epoch 1
  CHECK(r.prof->stats().tracked_live == 1);
  CHECK(r.leaks.empty());
  r.gc();
  r.gc();  // epoch 3: idle for 2
  REQUIRE(r.leaks.size() == 1);
  CHECK(r.leaks[0].addr == r.heap.at(0));
  CHECK(r.leaks[0].size == 56 + 4096);
  CHECK(r.leaks[0].site_id == kGrowSite);  // the profiler never saw it tracked at its birth
  CHECK(r.leaks[0].last_access_epoch == 1);
  CHECK(r.errors.empty());
}

TEST_CASE("resize: several untracked objects start being tracked in one epoch", "[core][resize]") {
  ResizeRig r;
  for (std::size_t i = 0; i < 8; ++i) r.prof->on_alloc(*r.thread, kAllocSite, kTable, r.heap.at(i * 256), 56);
  for (std::size_t i = 0; i < 8; ++i) r.prof->on_resize(*r.thread, r.heap.at(i * 256), 2048 + i, kGrowSite, kTable);
  r.gc();  // no record existed before: each resize starts one
  CHECK(r.prof->stats().tracked_live == 8);
  r.gc();
  r.gc();
  CHECK(r.leaks.size() == 8);
  CHECK(r.errors.empty());
}

TEST_CASE("resize: a tracked object keeps its site and takes its new footprint", "[core][resize]") {
  ResizeRig r;
  r.prof->on_alloc(*r.thread, kAllocSite, kTable, r.heap.at(0), 2048);
  r.prof->on_resize(*r.thread, r.heap.at(0), 2048 + 8192, kGrowSite, kTable);  // same epoch as its birth
  r.prof->on_resize(*r.thread, r.heap.at(0), 2048 + 16384, kGrowSite, kTable);  // the last one counts
  r.gc();
  r.gc();
  CHECK(r.leaks.empty());
  r.gc();  // epoch 2: idle for K = 2 since its birth
  REQUIRE(r.leaks.size() == 1);
  CHECK(r.leaks[0].size == 2048 + 16384);
  CHECK(r.leaks[0].site_id == kAllocSite);
  CHECK(r.prof->stats().objects_tracked == 1);
  CHECK(r.errors.empty());
}

TEST_CASE("resize: an object in use is not reported however large it grows", "[core][resize]") {
  ResizeRig r;
  r.prof->on_alloc(*r.thread, kAllocSite, kTable, r.heap.at(0), 56);
  for (int i = 1; i <= 6; ++i) {
    r.prof->on_resize(*r.thread, r.heap.at(0), 56 + 1024 * i, kGrowSite, kTable);
    r.touch(0);
    r.gc();
  }
  CHECK(r.leaks.empty());
  CHECK(r.prof->possible_leaks().empty());
}

TEST_CASE("resize: the trace records footprints and the analyzer ranks by them", "[core][resize]") {
  ResizeRig r;
  r.prof->on_alloc(*r.thread, kAllocSite, kTable, r.heap.at(0), 56);
  r.prof->on_alloc(*r.thread, kAllocSite, kTable, r.heap.at(128), 56);
  r.prof->on_resize(*r.thread, r.heap.at(0), 56 + 512, kGrowSite, kTable);
  r.gc();
  r.prof->on_resize(*r.thread, r.heap.at(0), 56 + 4096, kGrowSite, kTable);
  r.gc();
  REQUIRE(r.prof->finish().ok());
  auto c = trace::load(std::span<const std::byte>(r.sink->data()));
  REQUIRE(c.ok());
  REQUIRE(c->resizes.size() == 2);
  CHECK(c->resizes[0].addr == r.heap.at(0));
  CHECK(c->resizes[0].bytes == 56 + 512);
  CHECK(c->resizes[0].epoch == 0);
  CHECK(c->resizes[1].bytes == 56 + 4096);
  CHECK(c->resizes[1].epoch == 1);
  CHECK(c->resizes[1].thread == 1);
  auto a = analysis::analyze(std::span<const std::byte>(r.sink->data()));
  REQUIRE(a.ok());
  CHECK(a->stats.resizes == 2);
  CHECK(a->stats.unknown_resizes == 0);
  REQUIRE(a->objects.size() == 2);
  CHECK(a->objects.size_of(0) == 56);  // the address range is unchanged...
  CHECK(a->objects.footprint_of(0) == 56 + 4096);  // ...the footprint is what it holds
  CHECK(analysis::object_metrics(*a, 0).size == 56 + 4096);
  CHECK(analysis::object_metrics(*a, 1).size == 56);
}

TEST_CASE("resize: the hook checks refuse a resize where no object starts", "[core][resize][protocol]") {
  ResizeRig r;
  r.prof->on_alloc(*r.thread, kAllocSite, kTable, r.heap.at(0), 56);
  r.prof->on_resize(*r.thread, r.heap.at(64), 4096, kGrowSite, kTable);  // nothing was allocated there
  r.gc();  // checked when the epoch's allocations are known
  REQUIRE(r.errors.size() == 1);
  CHECK(r.errors[0].hook == "on_resize");
  CHECK(r.errors[0].addr == r.heap.at(64));
  CHECK(r.messages[0].find("no live object starts") != std::string::npos);
}

TEST_CASE("resize: an address outside every space is refused, never tracked", "[core][resize][protocol]") {
  ResizeRig r;
  r.prof->on_resize(*r.thread, r.heap.at(0) - 4096, 1 << 20, kGrowSite, kTable);
  REQUIRE(r.errors.size() == 1);
  CHECK(r.errors[0].hook == "on_resize");
  r.gc();
  CHECK(r.prof->stats().tracked_live == 0);
}

TEST_CASE("on_root: a collector's root mark lands in the epoch the GC starts, at the address it gives",
          "[core][on_root]") {
  ProfilerRig r(1 << 16);
  r.prof->on_alloc(*r.thread, 1, 1, r.at(0), 64);
  r.prof->on_alloc(*r.thread, 1, 1, r.at(128), 64);
  r.prof->on_alloc(*r.thread, 1, 1, r.at(256), 64);
  r.touch(256);
  REQUIRE(r.prof->gc_begin(GcKind::kFull).ok());  // epoch 0 ends: only the touch
  r.prof->on_move(r.at(0), r.at(512));
  r.prof->on_root(r.at(512));  // the frame's object, at its new address
  r.prof->on_root(r.at(128));  // a root that did not move
  REQUIRE(r.prof->gc_end().ok());
  CHECK(r.prof->stats().bits_harvested == 1u);
  CHECK(r.prof->stats().root_marks == 2u);
  r.gc();  // epoch 1 ends: the two root marks
  CHECK(r.prof->stats().bits_harvested == 3u);
  r.gc();  // nothing: a root mark is for one epoch, like a barrier's
  CHECK(r.prof->stats().bits_harvested == 3u);
  CHECK(r.errors.empty());
  auto a = r.analyze();
  REQUIRE(a.objects.size() == 3);
  CHECK(a.objects.access_count(0) == 1u);  // moved, then marked as a root
  CHECK(a.objects.last_access(0) == 1u);
  CHECK(a.objects.access_count(1) == 1u);
  CHECK(a.objects.last_access(1) == 1u);
  CHECK(a.objects.access_count(2) == 1u);
  CHECK(a.objects.last_access(2) == 0u);
}

TEST_CASE("on_root: outside a GC or outside the spaces it is a protocol error and marks nothing", "[core][on_root]") {
  ProfilerRig r(1 << 16, [](ProfilerOptions& o) { o.check_hooks = false; });
  r.prof->on_alloc(*r.thread, 1, 1, r.at(0), 64);
  r.prof->on_root(r.at(0));  // no GC running: it would land in the epoch being harvested
  REQUIRE(r.errors.size() == 1);
  CHECK(r.messages[0].find("outside gc_begin/gc_end") != std::string::npos);
  REQUIRE(r.prof->gc_begin(GcKind::kFull).ok());
  r.prof->on_root(r.at(0) + (1 << 20));  // beyond the space
  REQUIRE(r.prof->gc_end().ok());
  REQUIRE(r.errors.size() == 2);
  CHECK(r.messages[1].find("registered space") != std::string::npos);
  CHECK(r.prof->stats().root_marks == 0u);
  CHECK(r.prof->stats().bits_harvested == 0u);
  r.gc();
  CHECK(r.prof->stats().bits_harvested == 0u);
}

}  // namespace test_resize
