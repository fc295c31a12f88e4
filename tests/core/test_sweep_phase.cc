// Collectors that let the mutator run inside the GC bracket (lazy/incremental sweeping, as
// Lua's incremental collector and a CMS sweep do): frees interleave with new allocations that
// reuse the freed memory, and the profiler, its trace and the analyzer must all agree that the
// new object is alive and the old one dead.
#include <objprof/analysis/analyzer.h>
#include <objprof/barrier.h>
#include <objprof/profiler.h>
#include <objprof/trace_reader.h>

#include "test_support.h"

#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

namespace test_sweep_phase {

using namespace objprof;
using objprof::test::ProfilerRig;

namespace {

constexpr std::uint32_t kOldSite = 1, kNewSite = 2, kType = 7;

struct SweepRig : ProfilerRig {
  explicit SweepRig(std::size_t chunk_payload = trace::kDefaultChunkPayload)
      : ProfilerRig(1 << 16, [&](ProfilerOptions& o) {
          o.stale_after_epochs = 3;
          o.min_tracked_size = 256;
          o.chunk_payload = chunk_payload;
        }) {
    REQUIRE(prof->define_type({kType, "Blob", 512, false}).ok());
    REQUIRE(prof->define_site({kOldSite, 0, "Old.make", 1}).ok());
    REQUIRE(prof->define_site({kNewSite, 0, "New.make", 2}).ok());
  }
  void quiet_gc() { gc(GcKind::kConcurrent); }
};

// The id of the object born at `addr` with `site` (the analyzer's site index is by first use).
std::optional<analysis::ObjectId> object_at(const analysis::TraceAnalysis& a, Address addr, std::uint32_t site) {
  for (analysis::ObjectId o = 0; o < a.objects.size(); ++o)
    if (a.objects.birth_addr(o) == addr && a.sites[a.contexts[a.objects.context(o)].site].id == site) return o;
  return std::nullopt;
}

}  // namespace

TEST_CASE("sweep phase: memory freed in a bracket and reused by the mutator in it", "[core][sweep]") {
  SweepRig r;
  r.prof->on_alloc(*r.thread, kOldSite, kType, r.heap.at(0), 512);
  r.prof->on_alloc(*r.thread, kOldSite, kType, r.heap.at(1024), 512);
  REQUIRE(r.prof->gc_begin(GcKind::kConcurrent).ok());  // epoch 0 harvested
  r.prof->on_free(r.heap.at(0));                         // the sweep frees the first object...
  r.prof->on_alloc(*r.thread, kNewSite, kType, r.heap.at(0), 512);  // ...the mutator reuses it
  r.touch(0);
  r.prof->on_free(r.heap.at(1024));                      // the sweep goes on
  REQUIRE(r.prof->gc_end().ok());
  for (int i = 0; i < 5; ++i) {  // the new object stays in use
    r.touch(0);
    r.quiet_gc();
  }
  CHECK(r.errors.empty());
  CHECK(r.leaks.empty());  // a free logged in the bracket must not kill the new record
  CHECK(r.prof->stats().tracked_live == 1);

  const auto a = r.analyze();
  CHECK(a.stats.inferred_deaths == 0);
  CHECK(a.stats.unknown_frees == 0);
  const auto old_obj = object_at(a, r.heap.at(0), kOldSite);
  const auto new_obj = object_at(a, r.heap.at(0), kNewSite);
  REQUIRE(old_obj);
  REQUIRE(new_obj);
  CHECK(a.objects.death_epoch(*old_obj) == 0);
  CHECK(a.objects.alive(*new_obj));
  CHECK(a.objects.birth_epoch(*new_obj) == 1);  // born in the bracket: counts in the next epoch
  CHECK(a.objects.last_access(*new_obj) == 5);  // every epoch from its birth to the end
  CHECK(a.objects.access_count(*new_obj) == 5);
}

TEST_CASE("sweep phase: an object born in a bracket and never used again goes stale on time", "[core][sweep]") {
  SweepRig r;
  r.prof->on_alloc(*r.thread, kOldSite, kType, r.heap.at(0), 512);
  REQUIRE(r.prof->gc_begin(GcKind::kConcurrent).ok());
  r.prof->on_free(r.heap.at(0));
  r.prof->on_alloc(*r.thread, kNewSite, kType, r.heap.at(0), 512);
  REQUIRE(r.prof->gc_end().ok());  // epoch 1 starts; the new object counts from it
  for (int i = 0; i < 3; ++i) r.quiet_gc();  // epochs 1, 2, 3 end without an access
  CHECK(r.leaks.empty());                     // idle for 2 epochs after its birth epoch
  r.quiet_gc();                               // epoch 4: idle for K = 3
  REQUIRE(r.leaks.size() == 1);
  CHECK(r.leaks[0].site_id == kNewSite);
  CHECK(r.leaks[0].last_access_epoch == 1);
  CHECK(r.leaks[0].epoch == 4);  // detected at the end of epoch 1 + K
  CHECK(r.errors.empty());
}

TEST_CASE("sweep phase: mutator chunks filled inside the bracket follow its gc-end in the file", "[core][sweep]") {
  SweepRig r(/*chunk_payload=*/256);  // ten allocations fill a chunk
  for (std::size_t i = 0; i < 40; ++i) r.prof->on_alloc(*r.thread, kOldSite, kType, r.heap.at(i * 64), 64);
  REQUIRE(r.prof->gc_begin(GcKind::kConcurrent).ok());
  for (std::size_t i = 0; i < 40; ++i) {
    r.prof->on_free(r.heap.at(i * 64));
    r.prof->on_alloc(*r.thread, kNewSite, kType, r.heap.at(i * 64), 64);  // many chunks' worth
  }
  REQUIRE(r.prof->gc_end().ok());
  REQUIRE(r.prof->finish().ok());
  auto c = trace::load(std::span<const std::byte>(r.sink->data()));
  REQUIRE(c.ok());
  REQUIRE(c->allocs.size() == 80);
  for (std::size_t i = 0; i < 80; ++i) CHECK(c->allocs[i].epoch == (i < 40 ? 0u : 1u));
  CHECK(c->frees.size() == 40);
  const auto a = r.analyze();
  CHECK(a.stats.inferred_deaths == 0);
  CHECK(a.live_objects == 40);
  CHECK(r.errors.empty());
}

TEST_CASE("sweep phase: a thread that detaches inside the bracket ends after its last chunk", "[core][sweep]") {
  SweepRig r;
  ThreadState* worker = *r.prof->attach_thread(2, "worker");
  r.prof->on_alloc(*worker, kOldSite, kType, r.heap.at(0), 512);
  REQUIRE(r.prof->gc_begin(GcKind::kConcurrent).ok());
  r.prof->on_free(r.heap.at(0));
  r.prof->on_alloc(*worker, kNewSite, kType, r.heap.at(0), 512);
  r.prof->detach_thread(*worker);
  REQUIRE(r.prof->gc_end().ok());
  REQUIRE(r.prof->finish().ok());
  auto c = trace::load(std::span<const std::byte>(r.sink->data()));
  REQUIRE(c.ok());
  REQUIRE(c->allocs.size() == 2);
  CHECK(c->allocs[1].thread == 2);
  CHECK(c->ended_threads == std::vector<std::uint32_t>{2});
  const auto a = r.analyze();
  const auto new_obj = object_at(a, r.heap.at(0), kNewSite);
  REQUIRE(new_obj);
  CHECK(a.objects.alive(*new_obj));
  CHECK(r.errors.empty());
}

TEST_CASE("sweep phase: finish() inside a bracket closes it and loses nothing", "[core][sweep]") {
  SweepRig r;
  r.prof->on_alloc(*r.thread, kOldSite, kType, r.heap.at(0), 512);
  REQUIRE(r.prof->gc_begin(GcKind::kConcurrent).ok());
  r.prof->on_free(r.heap.at(0));
  r.prof->on_alloc(*r.thread, kNewSite, kType, r.heap.at(0), 512);
  REQUIRE(r.prof->finish().ok());  // the runtime exits in the middle of its sweep
  CHECK_FALSE(r.prof->in_gc());
  auto c = trace::load(std::span<const std::byte>(r.sink->data()));
  REQUIRE(c.ok());
  CHECK(c->summary.complete);
  CHECK(c->allocs.size() == 2);
  CHECK(c->gc_ends.size() == 1);
}

TEST_CASE("sweep phase: objects born before, in and after a bracket die when freed, also from a detached thread",
          "[core][sweep]") {
  // A thread claims its new objects' start bits itself outside a bracket, and leaves those it
  // allocates inside one to the next gc_begin: a start left unclaimed would make the collector
  // hooks drop the object's free (the record would live on and be reported), one claimed in
  // the bracket would be retired with the dead object whose memory it reuses.
  const bool traced = GENERATE(false, true);  // without a trace the collector hooks take their short path
  ProfilerRig rig(1 << 16, [traced](ProfilerOptions& o) {
    if (!traced) o.trace_sink.reset();
    o.stale_after_epochs = 3;
    o.min_tracked_size = 256;
  });
  Profiler& p = *rig.prof;
  REQUIRE(p.define_type({kType, "Blob", 512, false}).ok());
  REQUIRE(p.define_site({kOldSite, 0, "Old.make", 1}).ok());
  REQUIRE(p.define_site({kNewSite, 0, "New.make", 2}).ok());
  ThreadState* worker = *p.attach_thread(2, "worker");
  p.on_alloc(*worker, kOldSite, kType, rig.at(0), 512);     // claimed by the worker
  p.on_alloc(*worker, kOldSite, kType, rig.at(1024), 512);  // claimed by the worker
  REQUIRE(p.gc_begin(GcKind::kConcurrent).ok());
  p.on_free(rig.at(0));
  p.on_alloc(*worker, kNewSite, kType, rig.at(0), 512);     // in the bracket: claimed at the next gc_begin
  p.on_alloc(*worker, kNewSite, kType, rig.at(2048), 512);  // likewise
  REQUIRE(p.gc_end().ok());
  CHECK(p.stats().tracked_live == 1);  // the one at 1024 (the bracket's two are not added yet)
  p.on_alloc(*worker, kNewSite, kType, rig.at(4096), 512);  // after it: claimed by the worker
  p.detach_thread(*worker);  // its records wait for the next gc_begin, claimed or not
  // One GC adds the four records, the next frees them all.
  auto add_then_free_all = [&] {
    rig.gc(GcKind::kConcurrent);
    CHECK(p.stats().tracked_live == 4);
    REQUIRE(p.gc_begin(GcKind::kConcurrent).ok());
    for (std::size_t off : {0, 1024, 2048, 4096}) p.on_free(rig.at(off));
    REQUIRE(p.gc_end().ok());
    CHECK(p.stats().tracked_live == 0);
  };
  add_then_free_all();
  for (int i = 0; i < 6; ++i) rig.gc(GcKind::kConcurrent);
  CHECK(rig.leaks.empty());
  CHECK(rig.errors.empty());
  // The memory is reused: new objects there conflict with nothing left behind.
  ThreadState* again = *p.attach_thread(3, "again");
  for (std::size_t off : {0, 1024, 2048, 4096}) p.on_alloc(*again, kNewSite, kType, rig.at(off), 512);
  add_then_free_all();
  p.detach_thread(*again);
}

}  // namespace test_sweep_phase
