// The lazy sweeper (GcPolicy::kLazySweep) seen from outside, with the hook checks on:
// - the sweep interleaves with mutator work: allocations happen between gc_begin and gc_end
//   (the mutator sees Profiler::in_gc() after its allocation returns), they reuse memory the
//   same bracket freed, and the trace writes them after that bracket's gc-end, in epoch e + 1;
// - a new collection and the last mutator's detach finish a pending sweep, and an allocation
//   that does not fit sweeps on until it does;
// - several mutators, any of which sweeps while the others run and access their objects.
// In every case the analyzer rebuilds exactly the heap's live objects from the trace.
#include "sim/heap.h"
#include "sim_test_support.h"

#include "../test_env.h"

#include <objprof/analysis/analyzer.h>
#include <objprof/objprof.h>
#include <objprof/trace_reader.h>

#include <catch2/catch.hpp>

#include <iterator>
#include <set>
#include <tuple>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace objprof::sim::test_sim_lazy_sweep {
namespace {

// 128 slots, filled round-robin by step().
struct Ring : test::SlotRoots {
  Ring() : SlotRoots(128) {}
};

struct Rig : test::CheckedProfiler {
  std::unique_ptr<Heap> heap;
  std::uint32_t type = 0;  // long[]: slot 0 holds the allocation's sequence number
  std::vector<GcInfo> gcs;

  explicit Rig(std::uint64_t sweep_step = HeapOptions{}.lazy_sweep_step) {
    HeapOptions ho;
    ho.gc = GcPolicy::kLazySweep;
    ho.heap_bytes = 256 << 10;
    ho.lazy_sweep_step = sweep_step;
    auto h = Heap::create(ho, prof.get());
    REQUIRE(h.ok());
    heap = std::move(*h);
    heap->on_gc = [this](const GcInfo& g) { gcs.push_back(g); };
    SimType t;
    t.name = "long[]";
    t.is_array = true;
    type = *heap->add_type(t);
    REQUIRE(prof->define_site({1, 0, "lazy.alloc", 0}).ok());
  }

  // Allocates a 24..240-byte array holding `seq`; keeps one in 8 in the ring (the one it
  // replaces dies) and checks the ring's contents now and then. 0 when the allocation or the
  // check failed. No Catch2 assertions here: worker threads call it.
  Address step(Mutator& m, Ring& ring, std::uint64_t seq) {
    auto a = heap->allocate(m, 1, type, 1 + seq % 28);
    if (!a.ok()) return 0;
    Heap::store(*a, 0, seq);
    if (seq % 8 == 0) ring.slots[(seq / 8) % ring.slots.size()] = *a;
    if (seq % 64 == 0 && !ring_intact(m, ring)) return 0;
    return *a;
  }

  bool ring_intact(Mutator& m, const Ring& ring) const {
    for (std::size_t i = 0; i < ring.slots.size(); ++i) {
      const Address a = ring.slots[i];
      if (a == 0) continue;
      if (m.thread) access(*m.thread, prof->barrier_descriptor(0), a);
      const std::uint64_t seq = Heap::load(a, 0);
      // The kept object itself, not a new tenant of a cell the sweep freed under it.
      if (Heap::header(a).type != type || seq % 8 != 0 || (seq / 8) % ring.slots.size() != i) return false;
    }
    return true;
  }

  // After the mutators left: the analyzer's live objects are the heap's, and nothing was guessed.
  void check_trace_against_heap() {
    REQUIRE_FALSE(heap->sweeping());  // the last detach_mutator ended the pending sweep
    REQUIRE(prof->finish().ok());
    CHECK(errors.empty());
    CHECK(prof->stats().protocol_errors == 0);
    auto a = analysis::analyze(std::span<const std::byte>(sink->data()));
    REQUIRE(a.ok());
    CHECK(a->complete);
    CHECK(a->stats.inferred_deaths == 0);
    CHECK(a->stats.unknown_frees == 0);
    CHECK(a->stats.frees + a->stats.range_freed == heap->stats().objects_freed);
    REQUIRE(a->gcs.size() == gcs.size());
    for (std::size_t i = 0; i < gcs.size(); ++i) CHECK(a->gcs[i].freed_objects == gcs[i].freed_objects);
    std::set<Address> present, live;
    heap->for_each_object([&](Address o) { present.insert(o); });
    for (analysis::ObjectId o = 0; o < a->objects.size(); ++o)
      if (a->objects.alive(o)) live.insert(a->objects.last_addr(o));
    CHECK(live == present);
  }
};

// Trace records in file order: no allocation is written inside a bracket, and one of epoch
// e + 1 only after gc-end(e).
struct FileOrder final : trace::Visitor {
  std::uint64_t ends = 0, inside = 0, early = 0;
  bool open = false;
  void gc_begin(const trace::GcEvent&) override { open = true; }
  void gc_end(const trace::GcEvent&) override {
    open = false;
    ++ends;
  }
  void alloc(const trace::AllocEvent& a) override {
    inside += open;
    early += a.epoch > ends;
  }
};

struct Seen {
  Address addr;
  bool in_gc;          // the bracket was open when the allocation returned
  std::uint64_t epoch;
};

}  // namespace

TEST_CASE("lazy sweep: allocations inside the bracket reuse memory it freed and count in epoch e + 1",
          "[sim][lazysweep]") {
  Rig r;
  ThreadState* ts = *r.prof->attach_thread(1, "main");
  Ring ring;
  Mutator m{&ring, ts};
  r.heap->attach_mutator(&m);
  std::vector<Seen> seen;
  // Not scaled down under emulation: the GC counts below need this many allocations (best fit
  // packs a 256 KiB heap well), and they take under a second under qemu.
  const std::uint64_t n = 20000;
  for (std::uint64_t i = 0; i < n; ++i) {
    const Address a = r.step(m, ring, i);
    REQUIRE(a != 0);
    seen.push_back({a, r.prof->in_gc(), r.prof->epoch()});
  }
  r.heap->detach_mutator(&m);  // ends the pending sweep, if any
  r.prof->detach_thread(*ts);
  const HeapStats hs = r.heap->stats();

  std::uint64_t in_bracket = 0;
  std::set<std::uint64_t> brackets_with_allocs;
  for (const Seen& s : seen)
    if (s.in_gc) {
      ++in_bracket;
      brackets_with_allocs.insert(s.epoch);
    }
  CHECK(hs.gcs >= 5);
  CHECK(in_bracket == hs.objects_allocated_in_sweep);
  CHECK(brackets_with_allocs.size() >= hs.gcs - 1);  // every sweep spanned allocations
  CHECK(hs.sweep_steps > hs.gcs);

  r.check_trace_against_heap();
  auto c = trace::load(std::span<const std::byte>(r.sink->data()));
  REQUIRE(c.ok());
  REQUIRE(c->allocs.size() == n);
  // (bracket, first address, end): a free, or a free range (objects that start in it died).
  std::set<std::tuple<std::uint64_t, Address, Address>> freed;
  for (const trace::FreeEvent& f : c->frees) freed.emplace(f.epoch, f.addr, f.range ? f.addr + f.bytes : f.addr + 1);
  auto was_freed = [&](std::uint64_t epoch, Address a) {
    auto it = freed.upper_bound({epoch, a, ~Address{0}});
    if (it == freed.begin()) return false;
    --it;
    return std::get<0>(*it) == epoch && std::get<1>(*it) <= a && a < std::get<2>(*it);
  };
  std::uint64_t reused = 0;
  for (std::size_t i = 0; i < n; ++i) {
    INFO("allocation " << i);
    REQUIRE(c->allocs[i].addr == seen[i].addr);  // one thread: file order is allocation order
    CHECK(c->allocs[i].epoch == seen[i].epoch + (seen[i].in_gc ? 1 : 0));
    // An address the same bracket freed: the free came first (the hook checks refuse an
    // allocation over an object nobody freed).
    if (seen[i].in_gc && was_freed(seen[i].epoch, seen[i].addr)) ++reused;
  }
  CHECK(reused > 0);
  CHECK(hs.objects_reused_in_sweep >= reused);
  FileOrder order;
  REQUIRE(trace::read(std::span<const std::byte>(r.sink->data()), order).ok());
  CHECK(order.inside == 0);
  CHECK(order.early == 0);
  CHECK(order.ends == hs.gcs);
}

TEST_CASE("lazy sweep: a new collection finishes the pending sweep before it marks", "[sim][lazysweep]") {
  Rig r;
  ThreadState* ts = *r.prof->attach_thread(1, "main");
  Ring ring;
  Mutator m{&ring, ts};
  r.heap->attach_mutator(&m);
  std::uint64_t seq = 0;
  for (; seq < 600; ++seq) REQUIRE(r.step(m, ring, seq) != 0);  // ~90 KiB: no GC yet
  REQUIRE(r.gcs.empty());
  REQUIRE(r.heap->collect(m).ok());
  REQUIRE(r.heap->sweeping());  // the mark is done, the sweep waits for allocations
  CHECK(r.gcs.empty());         // the GC ends with its sweep
  CHECK(r.prof->in_gc());
  for (int i = 0; i < 10; ++i) REQUIRE(r.step(m, ring, seq++) != 0);
  CHECK(r.heap->sweeping());  // 10 steps of 4 KiB: not through the ~90 KiB yet
  const std::uint64_t epoch = r.prof->epoch();
  REQUIRE(r.heap->collect(m).ok());
  REQUIRE(r.gcs.size() == 1);  // the pending GC ended first...
  CHECK(r.gcs[0].allocated_in_sweep == 10);
  CHECK(r.prof->epoch() == epoch + 1);  // ...its bracket closed, and the new one opened
  CHECK(r.prof->in_gc());
  REQUIRE(r.heap->finish_sweep(m).ok());
  CHECK_FALSE(r.heap->sweeping());
  CHECK(r.gcs.size() == 2);
  CHECK_FALSE(r.prof->in_gc());
  r.heap->detach_mutator(&m);
  r.prof->detach_thread(*ts);
  r.check_trace_against_heap();
}

TEST_CASE("lazy sweep: with a tiny step, an allocation that does not fit sweeps on until it does", "[sim][lazysweep]") {
  Rig r(/*sweep_step=*/16);  // a cell per allocation: far slower than the mutator allocates
  ThreadState* ts = *r.prof->attach_thread(1, "main");
  Ring ring;
  Mutator m{&ring, ts};
  r.heap->attach_mutator(&m);
  const std::uint64_t n = 12000;  // not scaled: the GC count below needs them
  for (std::uint64_t i = 0; i < n; ++i) REQUIRE(r.step(m, ring, i) != 0);
  CHECK(r.heap->stats().gcs >= 3);
  CHECK(r.heap->stats().objects_allocated_in_sweep > 0);
  r.heap->detach_mutator(&m);
  r.prof->detach_thread(*ts);
  r.check_trace_against_heap();
}

TEST_CASE("lazy sweep: a run of dead objects that spans many steps reaches the profiler as one range",
          "[sim][lazysweep]") {
  Rig r;  // 4 KiB steps
  ThreadState* ts = *r.prof->attach_thread(1, "main");
  Ring ring;
  Mutator m{&ring, ts};
  r.heap->attach_mutator(&m);
  // A live object, ~60 KiB of objects that die (about 15 steps' worth), a live object.
  auto first_live = r.heap->allocate(m, 1, r.type, 30);
  REQUIRE(first_live.ok());
  ring.slots[0] = *first_live;
  std::vector<Address> dead;
  for (int i = 0; i < 240; ++i) {
    auto a = r.heap->allocate(m, 1, r.type, 30);
    REQUIRE(a.ok());
    dead.push_back(*a);
  }
  auto last_live = r.heap->allocate(m, 1, r.type, 30);
  REQUIRE(last_live.ok());
  ring.slots[1] = *last_live;
  REQUIRE(r.heap->collect(m).ok());
  REQUIRE(r.heap->sweeping());
  const std::uint64_t epoch = r.prof->epoch();
  // Small allocations step the sweep (from the bump region: the open run is never needed).
  std::uint64_t steps = 0;
  while (r.heap->sweeping()) {
    REQUIRE(r.heap->allocate(m, 1, r.type, 1).ok());
    REQUIRE(++steps < 1000);
  }
  CHECK(steps >= 14);
  r.heap->detach_mutator(&m);
  r.prof->detach_thread(*ts);
  r.check_trace_against_heap();
  auto c = trace::load(std::span<const std::byte>(r.sink->data()));
  REQUIRE(c.ok());
  std::uint64_t ranges = 0, covering = 0;
  for (const trace::FreeEvent& f : c->frees) {
    if (f.epoch != epoch || !f.range) continue;
    ++ranges;
    covering += f.addr <= dead.front() && dead.back() < f.addr + f.bytes;
  }
  CHECK(ranges == 1);
  CHECK(covering == 1);
}

TEST_CASE("lazy sweep: several mutators allocate, sweep and use their objects concurrently", "[sim][lazysweep]") {
  Rig r;
  const std::uint32_t threads = test::emulated() ? 2 : 3;
  const std::uint64_t per_thread = 8000;  // not scaled: the GC count below needs them
  std::vector<Ring> rings(threads);
  std::vector<Mutator> ms(threads);
  for (std::uint32_t t = 0; t < threads; ++t) {
    ms[t] = Mutator{&rings[t], *r.prof->attach_thread(t + 1, "mutator-" + std::to_string(t))};
    r.heap->attach_mutator(&ms[t]);  // all attached before any runs: no GC misses one
  }
  std::vector<std::thread> workers;
  std::vector<char> ok(threads, 1);
  for (std::uint32_t t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      for (std::uint64_t i = 0; i < per_thread && ok[t]; ++i) ok[t] = r.step(ms[t], rings[t], i) != 0;
      ok[t] = ok[t] && r.ring_intact(ms[t], rings[t]);
      // As the interpreter does: leave the profiler while still a running mutator.
      r.prof->detach_thread(*ms[t].thread);
      r.heap->detach_mutator(&ms[t]);
    });
  for (auto& w : workers) w.join();
  for (std::uint32_t t = 0; t < threads; ++t) CHECK(ok[t]);
  const HeapStats hs = r.heap->stats();
  CHECK(hs.objects_allocated == threads * per_thread);
  CHECK(hs.gcs >= 3);
  CHECK(hs.objects_allocated_in_sweep > 0);
  r.check_trace_against_heap();
}

}  // namespace objprof::sim
