// Differential test: a randomized runtime drives the real Profiler (allocation from two
// threads, barrier accesses, GCs that free, move and compact objects onto each other's old
// addresses, address reuse) while keeping the ground truth of every object's chain. The
// analyzer must rebuild every chain exactly from the trace: site, type, thread, size, birth,
// every (epoch, address) placement, death epoch and the epochs of access.
#include "../core/test_support.h"

#include <objprof/analysis/analyzer.h>
#include <objprof/barrier.h>
#include <objprof/profiler.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <random>
#include <set>

namespace test_chain_truth {

using namespace objprof;
using namespace objprof::analysis;

namespace {

struct Truth {
  std::uint32_t site, type, thread;
  std::uint64_t size;
  std::uint32_t birth_epoch;
  std::vector<Placement> placements;
  std::uint32_t death = kNoEpoch;
  std::set<std::uint32_t> accessed;
};

std::vector<EpochRun> runs_of(const std::set<std::uint32_t>& s) {
  std::vector<EpochRun> out;
  for (std::uint32_t e : s) {
    if (!out.empty() && out.back().last + 1 == e) out.back().last = e;
    else out.push_back({e, e});
  }
  return out;
}

struct Scenario {
  std::vector<std::byte> trace;
  std::vector<Truth> truth;
  std::uint32_t epochs = 0;
};

Scenario run_scenario(std::uint64_t seed, int epochs, int allocs_per_epoch) {
  constexpr std::uint64_t kSlot = 128;
  constexpr std::size_t kSlots = 512;
  test::FakeHeap heap(kSlot * kSlots);
  auto sink = std::make_unique<MemorySink>();
  MemorySink* raw = sink.get();
  ProfilerOptions po;
  po.trace_sink = std::move(sink);
  po.chunk_payload = 512;  // many chunks: thread chunks interleave within epochs
  po.default_leak_printer = false;
  po.on_leak = {};
  auto p = Profiler::create(std::move(po));
  REQUIRE(p.ok());
  Profiler& prof = **p;
  REQUIRE(prof.add_space(heap.space()).ok());
  for (std::uint32_t t = 1; t <= 3; ++t) REQUIRE(prof.define_type({t, "T" + std::to_string(t), 16 * t, false}).ok());
  for (std::uint32_t s = 1; s <= 4; ++s) REQUIRE(prof.define_site({s, 0x1000 + s, "m" + std::to_string(s), s}).ok());
  ThreadState* threads[2] = {*prof.attach_thread(0, "t0"), *prof.attach_thread(1, "t1")};

  std::mt19937_64 rng(seed);
  auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
  Scenario sc;
  std::vector<std::int64_t> slot_owner(kSlots, -1);  // truth index of the live object in each slot
  auto live_slots = [&] {
    std::vector<std::size_t> v;
    for (std::size_t s = 0; s < kSlots; ++s)
      if (slot_owner[s] >= 0) v.push_back(s);
    return v;
  };
  for (int e = 0; e < epochs; ++e) {
    const auto epoch = static_cast<std::uint32_t>(e);
    // Mutator phase: allocations into free slots and accesses to random live objects.
    for (int i = 0; i < allocs_per_epoch; ++i) {
      const std::size_t s = pick(kSlots);
      if (slot_owner[s] >= 0) continue;
      Truth t;
      t.site = 1 + static_cast<std::uint32_t>(pick(4));
      t.type = 1 + static_cast<std::uint32_t>(pick(3));
      t.thread = static_cast<std::uint32_t>(pick(2));
      t.size = 8 * (1 + pick(16));
      t.birth_epoch = epoch;
      t.placements.push_back({epoch, heap.at(s * kSlot)});
      prof.on_alloc(*threads[t.thread], t.site, t.type, heap.at(s * kSlot), t.size);
      slot_owner[s] = static_cast<std::int64_t>(sc.truth.size());
      sc.truth.push_back(std::move(t));
    }
    for (std::size_t s : live_slots()) {
      if (pick(3) != 0) continue;
      Truth& t = sc.truth[static_cast<std::size_t>(slot_owner[s])];
      access<>(*threads[pick(2)], prof.bitmap(0), heap.at(s * kSlot));
      t.accessed.insert(epoch);
    }
    // GC: each live object dies, moves or stays; destinations avoid objects that stay.
    REQUIRE(prof.gc_begin(e % 3 == 0 ? GcKind::kCompacting : GcKind::kCopying).ok());
    const std::vector<std::size_t> live = live_slots();
    std::vector<std::int64_t> next(kSlots, -1);
    std::vector<std::size_t> movers;
    std::vector<std::pair<int, std::size_t>> ops;  // 0 free, 1 move (with destination below)
    for (std::size_t s : live) {
      const std::size_t r = pick(10);
      if (r < 3) ops.push_back({0, s});
      else if (r < 6) movers.push_back(s);
      else next[s] = slot_owner[s];
    }
    std::vector<std::pair<std::size_t, std::size_t>> moves;
    for (std::size_t s : movers) {
      std::size_t d = pick(kSlots);
      for (std::size_t k = 0; k < kSlots && (next[d] >= 0 || d == s); ++k) d = (d + 1) % kSlots;
      if (next[d] >= 0 || d == s) {  // no room: it stays
        next[s] = slot_owner[s];
        continue;
      }
      next[d] = slot_owner[s];
      moves.push_back({s, d});
      ops.push_back({1, moves.size() - 1});
    }
    std::shuffle(ops.begin(), ops.end(), rng);  // frees and moves in any order
    for (auto [kind, x] : ops) {
      if (kind == 0) {
        prof.on_free(heap.at(x * kSlot));
        sc.truth[static_cast<std::size_t>(slot_owner[x])].death = epoch;
      } else {
        auto [from, to] = moves[x];
        prof.on_move(heap.at(from * kSlot), heap.at(to * kSlot));
        sc.truth[static_cast<std::size_t>(slot_owner[from])].placements.push_back({epoch, heap.at(to * kSlot)});
      }
    }
    REQUIRE(prof.gc_end().ok());
    slot_owner = next;
  }
  // A last mutator phase whose bits are never harvested.
  for (std::size_t s : live_slots()) access<>(*threads[0], prof.bitmap(0), heap.at(s * kSlot));
  prof.detach_thread(*threads[1]);
  REQUIRE(prof.finish().ok());
  sc.trace = raw->take();
  sc.epochs = static_cast<std::uint32_t>(epochs);
  return sc;
}

}  // namespace

TEST_CASE("analyzer rebuilds every chain of a randomized profiled run exactly", "[analysis]") {
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    const Scenario sc = run_scenario(seed, 30, static_cast<int>(test::scaled(80, 2)));
    auto r = analyze(sc.trace);
    REQUIRE(r.ok());
    const TraceAnalysis& a = *r;
    INFO("seed " << seed);
    CHECK(a.complete);
    CHECK(a.warnings.empty());
    CHECK(a.end_epoch == sc.epochs);
    CHECK(a.stats.unresolved_bits == 0);
    CHECK(a.stats.unknown_frees == 0);
    CHECK(a.stats.unknown_moves == 0);
    CHECK(a.stats.inferred_deaths == 0);
    REQUIRE(a.objects.size() == sc.truth.size());
    // File order groups allocations by thread chunk; match objects by (birth epoch, address).
    std::map<std::pair<std::uint32_t, std::uint64_t>, const Truth*> by_birth;
    for (const Truth& t : sc.truth) by_birth[{t.birth_epoch, t.placements.front().addr}] = &t;
    REQUIRE(by_birth.size() == sc.truth.size());
    std::uint64_t live = 0;
    for (ObjectId o = 0; o < a.objects.size(); ++o) {
      const Chain c = a.objects.chain(o);
      auto it = by_birth.find({c.birth_epoch, c.placements.front().addr});
      REQUIRE(it != by_birth.end());
      const Truth& t = *it->second;
      INFO("object " << o);
      REQUIRE(a.sites[a.contexts[c.context].site].id == t.site);
      REQUIRE(a.types[a.contexts[c.context].type].id == t.type);
      REQUIRE(a.threads[a.contexts[c.context].thread].id == t.thread);
      REQUIRE(c.size == t.size);
      REQUIRE(c.placements == t.placements);
      REQUIRE(c.death_epoch == t.death);
      REQUIRE(c.accessed == runs_of(t.accessed));
      live += t.death == kNoEpoch;
    }
    CHECK(a.live_objects == live);
    // Birth clocks are the running sum of sizes in file order, and GCs agree with them.
    for (std::size_t e = 0; e < a.gcs.size(); ++e) CHECK(a.gcs[e].bytes_begin >= (e ? a.gcs[e - 1].bytes_end : 0));
    CHECK(a.threads[a.thread_index.at(1)].end_epoch == sc.epochs);
  }
}

TEST_CASE("the incremental Analyzer gives analyze()'s result", "[analysis]") {
  const Scenario sc = run_scenario(4, 30, static_cast<int>(test::scaled(60, 2)));
  auto piped = analyze(sc.trace);
  REQUIRE(piped.ok());
  Analyzer inc;
  inc.set_input_bytes(sc.trace.size());
  auto summary = trace::read(sc.trace, inc.visitor());
  REQUIRE(summary.ok());
  auto r = inc.take(*summary);
  REQUIRE(r.ok());
  const TraceAnalysis& a = *piped;
  const TraceAnalysis& b = *r;
  CHECK(b.complete == a.complete);
  CHECK(b.end_epoch == a.end_epoch);
  CHECK(b.live_objects == a.live_objects);
  CHECK(b.gcs.size() == a.gcs.size());
  REQUIRE(b.objects.size() == a.objects.size());
  REQUIRE(a.objects.size() > 100);
  for (ObjectId o = 0; o < a.objects.size(); ++o) {
    const Chain x = a.objects.chain(o), y = b.objects.chain(o);
    INFO("object " << o);
    REQUIRE(y.context == x.context);
    REQUIRE(y.size == x.size);
    REQUIRE(y.birth_epoch == x.birth_epoch);
    REQUIRE(y.death_epoch == x.death_epoch);
    REQUIRE(y.placements == x.placements);
    REQUIRE(y.accessed == x.accessed);
  }
}

}  // namespace test_chain_truth
