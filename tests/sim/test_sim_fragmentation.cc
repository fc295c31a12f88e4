// The mark-sweep heaps under fragmentation (sim/sweep.cc, sim/compact.cc), with the hook checks
// on: a sweep coalesces adjacent dead objects and free cells into one gap; a space whose free
// memory lies in gaps too small for an allocation compacts (survivors slide down with their
// contents and references, including references from the large-object space, and the trace's
// moves replay to the heap's own objects); a heap that no collection can help answers out of
// memory with a clear error and stays usable.
#include "sim/heap.h"
#include "sim_test_support.h"

#include <objprof/objprof.h>
#include <objprof/trace_reader.h>

#include <catch2/catch.hpp>

#include <iterator>
#include <limits>
#include <set>
#include <span>
#include <string>
#include <vector>

namespace objprof::sim::test_sim_fragmentation {
namespace {

using Roots = test::SlotRoots;

// A mark-sweep heap of `heap_bytes` with a profiler writing a trace to memory, a mutator whose
// roots are `roots`, and three types: Node (64 bytes: prev, id, four scalars), long[] and ref[].
struct Rig : test::CheckedProfiler {
  std::unique_ptr<Heap> heap;
  ThreadState* ts = nullptr;
  Roots roots;
  Mutator m;
  std::uint32_t node = 0, longs = 0, refs = 0;

  Rig(GcPolicy gc, std::uint64_t heap_bytes, std::uint64_t large_object_threshold = HeapOptions{}.large_object_threshold) {
    HeapOptions ho;
    ho.gc = gc;
    ho.heap_bytes = heap_bytes;
    ho.large_object_threshold = large_object_threshold;
    auto h = Heap::create(ho, prof.get());
    REQUIRE(h.ok());
    heap = std::move(*h);
    SimType n;
    n.name = "Node";
    n.field_names = {"prev", "id", "a", "b", "c", "d"};
    n.slot_is_ref = {1, 0, 0, 0, 0, 0};
    node = *heap->add_type(n);
    SimType l;
    l.name = "long[]";
    l.is_array = true;
    longs = *heap->add_type(l);
    SimType r;
    r.name = "ref[]";
    r.is_array = true;
    r.elem_is_ref = true;
    refs = *heap->add_type(r);
    REQUIRE(prof->define_site({1, 0, "frag.alloc", 0}).ok());
    ts = *prof->attach_thread(1, "frag");
    m = Mutator{&roots, ts};
    heap->attach_mutator(&m);
  }

  ~Rig() {
    if (!ts) return;  // check_trace detached
    heap->detach_mutator(&m);
    prof->detach_thread(*ts);
  }

  // Fills the whole mark-sweep space with 64-byte nodes (node i holds id i), keeping every
  // `keep`-th in a root, each pointing to the previous kept one. No GC runs.
  void fill(std::uint64_t keep) {
    const std::uint64_t n = heap->free_space().free_bytes / 64;
    Address prev = 0;
    for (std::uint64_t i = 0; i < n; ++i) {
      auto a = heap->allocate(m, 1, node);
      REQUIRE(a.ok());
      Heap::store(*a, 1, i);
      if (i % keep != 0) continue;
      Heap::store(*a, 0, prev);
      roots.slots.push_back(*a);
      prev = *a;
    }
    REQUIRE(heap->stats().gcs == 0);
    REQUIRE(heap->free_space().free_bytes == 0);
  }

  // A collection that leaves no sweep pending.
  void collect() {
    REQUIRE(heap->collect(m).ok());
    REQUIRE(heap->finish_sweep(m).ok());
  }

  // The kept nodes, whatever moved: root k holds id k * keep and points to root k - 1.
  void check_nodes(std::uint64_t keep) const {
    for (std::size_t k = 0; k < roots.slots.size(); ++k) {
      const Address a = roots.slots[k];
      if (a == 0) continue;
      INFO("kept node " << k);
      REQUIRE(Heap::header(a).type == node);
      CHECK(Heap::load(a, 1) == k * keep);
      if (k > 0 && roots.slots[k - 1]) CHECK(Heap::load(a, 0) == roots.slots[k - 1]);
    }
  }

  // Ends the run and replays its trace: the objects it leaves alive are exactly the heap's,
  // every move starts at a live object's pre-GC address, and the compactions are its
  // kCompacting GCs.
  void check_trace() {
    for (const std::string& e : errors) FAIL(e);
    heap->detach_mutator(&m);
    prof->detach_thread(*ts);
    ts = nullptr;
    REQUIRE(prof->finish().ok());
    auto c = trace::load(std::span<const std::byte>(sink->data()));
    REQUIRE(c.ok());
    std::uint64_t compacting = 0;
    for (const auto& g : c->gc_begins) compacting += g.kind == GcKind::kCompacting;
    CHECK(compacting == heap->stats().compactions);
    std::set<Address> live;
    for (std::uint64_t e = 0; e <= c->gc_begins.size(); ++e) {
      INFO("epoch " << e);
      for (const auto& a : c->allocs)
        if (a.epoch == e) REQUIRE(live.insert(a.addr).second);
      for (const auto& f : c->frees) {
        if (f.epoch != e) continue;
        if (!f.range) {
          REQUIRE(live.erase(f.addr) == 1);
          continue;
        }
        // The cells between two survivors (a sweep's, free cells and all) or a run of dead
        // objects (a compaction's plan, which reports a lone one with on_free): never empty.
        const auto first = live.lower_bound(f.addr), last = live.lower_bound(f.addr + f.bytes);
        REQUIRE(std::distance(first, last) >= 1);
        live.erase(first, last);
      }
      std::vector<Address> to;
      for (const auto& mv : c->moves) {
        if (mv.epoch != e) continue;
        REQUIRE(live.erase(mv.from) == 1);
        to.push_back(mv.to);
      }
      for (Address a : to) REQUIRE(live.insert(a).second);  // onto memory no survivor keeps
    }
    std::set<Address> present;
    heap->for_each_object([&](Address a) { present.insert(a); });
    CHECK(live == present);
  }
};

}  // namespace

TEST_CASE("a sweep coalesces adjacent dead objects and free gaps into one gap", "[sim][fragmentation]") {
  for (GcPolicy gc : {GcPolicy::kMarkSweep, GcPolicy::kLazySweep}) {
    INFO(gc_policy_name(gc));
    Rig rig(gc, 256 << 10);
    const std::uint64_t space = rig.heap->free_space().free_bytes;
    rig.fill(32);
    const std::uint64_t kept = rig.roots.slots.size();
    rig.collect();
    // One gap between each two survivors, 31 nodes wide; the last one is the bump region.
    Heap::FreeSpace f = rig.heap->free_space();
    CHECK(f.free_bytes == space - kept * 64);
    CHECK(f.gaps == kept);
    CHECK(f.largest_gap == 31 * 64);
    // A gap holds an object of its whole size, without a collection.
    REQUIRE(rig.heap->allocate(rig.m, 1, rig.longs, (31 * 64 - 16) / 8).ok());
    CHECK(rig.heap->stats().gcs == 1);
    // Every other survivor dies (unlinked first): each joins the two free gaps beside it.
    for (Address a : rig.roots.slots) Heap::store(a, 0, 0);
    for (std::size_t k = 1; k < kept; k += 2) rig.roots.slots[k] = 0;
    rig.collect();
    f = rig.heap->free_space();
    CHECK(f.gaps == (kept + 1) / 2);
    CHECK(f.largest_gap == 63 * 64);
    CHECK(rig.heap->stats().compactions == 0);
    rig.check_nodes(32);
    rig.check_trace();
  }
}

TEST_CASE("a fragmented mark-sweep space compacts rather than failing or sweeping again", "[sim][fragmentation]") {
  for (GcPolicy gc : {GcPolicy::kMarkSweep, GcPolicy::kLazySweep}) {
    INFO(gc_policy_name(gc));
    Rig rig(gc, 256 << 10);
    rig.fill(32);
    // A large object refers to every survivor: its references must follow them.
    const std::uint64_t kept = rig.roots.slots.size();
    auto table = rig.heap->allocate(rig.m, 1, rig.refs, 2048);
    REQUIRE(table.ok());
    for (std::uint64_t k = 0; k < kept; ++k) Heap::store(*table, k, rig.roots.slots[k]);
    rig.roots.slots.push_back(*table);
    rig.collect();
    const Heap::FreeSpace before = rig.heap->free_space();
    REQUIRE(before.largest_gap < 4000);  // most of the space is free, in 1984-byte gaps
    // 4000 bytes fit nowhere but in the free bytes: the allocation compacts, once.
    auto big = rig.heap->allocate(rig.m, 1, rig.longs, 500);
    REQUIRE(big.ok());
    const HeapStats s = rig.heap->stats();
    CHECK(s.gcs == 2);
    CHECK(s.compactions == 1);
    CHECK(s.objects_moved == kept - 1);  // all but the first survivor slid down
    rig.roots.slots.pop_back();
    rig.check_nodes(32);
    for (std::uint64_t k = 0; k < kept; ++k) CHECK(Heap::load(*table, k) == rig.roots.slots[k]);
    // The survivors are packed at the bottom: every free byte is one gap.
    const Heap::FreeSpace after = rig.heap->free_space();
    CHECK(after.gaps == 1);
    CHECK(after.largest_gap == after.free_bytes);
    CHECK(after.free_bytes == before.free_bytes - 4016);
    rig.roots.slots.push_back(*table);
    rig.roots.slots.push_back(*big);
    rig.check_trace();
  }
}

TEST_CASE("compaction on request: Heap::compact slides the survivors and the trace says kCompacting", "[sim][fragmentation]") {
  for (GcPolicy gc : {GcPolicy::kMarkSweep, GcPolicy::kLazySweep}) {
    INFO(gc_policy_name(gc));
    Rig rig(gc, 256 << 10);
    rig.fill(7);
    REQUIRE(rig.heap->compact(rig.m).ok());
    CHECK_FALSE(rig.heap->sweeping());  // stop-the-world even for the lazy sweeper
    CHECK(rig.heap->stats().compactions == 1);
    CHECK(rig.heap->free_space().gaps == 1);
    rig.check_nodes(7);
    rig.check_trace();
  }
}

TEST_CASE("out of memory after a compaction is a clear error, and the heap stays usable", "[sim][fragmentation]") {
  for (GcPolicy gc : {GcPolicy::kMarkSweep, GcPolicy::kLazySweep}) {
    INFO(gc_policy_name(gc));
    // Every object in the 48 KiB mark-sweep space (no large-object space in play).
    Rig rig(gc, 64 << 10, 1 << 20);
    rig.fill(4);  // a quarter survives: 36 KiB free in 192-byte gaps
    rig.collect();
    // 40 KiB cannot fit even once the 36 KiB are joined.
    auto big = rig.heap->allocate(rig.m, 1, rig.longs, 5000);
    REQUIRE_FALSE(big.ok());
    const std::string msg = big.error().message;
    INFO(msg);
    CHECK(msg.find("out of memory") != std::string::npos);
    CHECK(msg.find("64.0 KiB") != std::string::npos);
    CHECK(msg.find("40016-byte long[]") != std::string::npos);
    CHECK(msg.find("even after a full GC and a compaction") != std::string::npos);
    CHECK(msg.find("36.0 KiB free, the largest gap 36.0 KiB") != std::string::npos);
    CHECK(rig.heap->stats().compactions == 1);
    // What fits now fits without another collection, and the survivors are intact.
    const std::uint64_t gcs = rig.heap->stats().gcs;
    auto fits = rig.heap->allocate(rig.m, 1, rig.longs, 4000);
    REQUIRE(fits.ok());
    CHECK(rig.heap->stats().gcs == gcs);
    rig.check_nodes(4);
    rig.check_trace();
  }
}

TEST_CASE("out of memory without compaction when the free bytes could not hold the object", "[sim][fragmentation]") {
  for (GcPolicy gc : {GcPolicy::kMarkSweep, GcPolicy::kLazySweep}) {
    INFO(gc_policy_name(gc));
    Rig rig(gc, 64 << 10, 1 << 20);
    rig.fill(1);  // everything survives
    auto more = rig.heap->allocate(rig.m, 1, rig.node);
    REQUIRE_FALSE(more.ok());
    const std::string msg = more.error().message;
    INFO(msg);
    CHECK(msg.find("out of memory") != std::string::npos);
    CHECK(msg.find("even after a full GC (") != std::string::npos);
    CHECK(rig.heap->stats().gcs == 1);  // one sweep; compacting could not have made room
    CHECK(rig.heap->stats().compactions == 0);
    rig.check_nodes(1);
    rig.check_trace();
  }
}

TEST_CASE("a negative or NaN compact_free_fraction is refused", "[sim][fragmentation]") {
  HeapOptions ho;
  ho.gc = GcPolicy::kMarkSweep;
  ho.compact_free_fraction = -0.5;
  CHECK_FALSE(Heap::create(ho, nullptr).ok());
  ho.compact_free_fraction = std::numeric_limits<double>::quiet_NaN();
  CHECK_FALSE(Heap::create(ho, nullptr).ok());
  ho.compact_free_fraction = 2;  // compact only after a sweep failed
  CHECK(Heap::create(ho, nullptr).ok());
}

}  // namespace objprof::sim
