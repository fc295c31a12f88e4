// The analyzer's back half applies batches on several address-map shards at once
// (AnalyzerOptions::workers). Its result must be exactly that of applying every record in file
// order: these tests analyze random traces — allocations across two spaces (one not aligned
// to the shards' 64 KiB windows), address reuse without frees, GCs with frees, moves onto
// other objects' addresses, range moves, free ranges (a copying GC's whole evacuated space, or
// a few objects), allocations and online leak reports inside GCs,
// bitmap dumps written as several records, frees and moves outside any GC, truncated traces —
// with 1 to 7 workers, and compare every object's chain and every counter.
#include "same_analysis.h"
#include "trace_builder.h"

#include "../../src/analysis/analyzer_back.h"
#include "../../src/analysis/crew.h"
#include "../test_env.h"

#include <objprof/analysis/analyzer.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <functional>
#include <random>
#include <thread>

namespace test_sharded_analysis {

using namespace objprof;
using namespace objprof::analysis;
using objprof::test::require_same;
using objprof::test::TraceBuilder;

namespace {

struct Shape {
  int rounds = 4;
  int allocs_per_round = 300;
  std::uint32_t granule = 8;
  bool end = true;
  // Frees and moves outside a GC make their batch apply in file order on one thread; without
  // them nearly every batch runs on all shards at once.
  bool outside_gc = true;
};

// A random but well-formed trace (the reader accepts it); what the objects do is random, and
// the analyzer's answer with one worker is the reference.
std::vector<std::byte> random_trace(std::uint64_t seed, const Shape& shape) {
  std::mt19937_64 rng(seed);
  const auto pick = [&](std::uint64_t n) { return n == 0 ? 0 : rng() % n; };
  const std::uint64_t g = shape.granule;
  const std::vector<TraceBuilder::Space> spaces = {{0, 0x1'0000'3000, 0x1'0000'3000 + (4 << 20), "young"},
                                                   {1, 0x2'0000'0000, 0x2'0000'0000 + (4 << 20), "old"}};
  TraceBuilder b(spaces, shape.granule);
  for (std::uint32_t t = 1; t <= 3; ++t) b.type(t, "T" + std::to_string(t), 16 * t);
  for (std::uint32_t s = 1; s <= 5; ++s) b.site(s, "S.m" + std::to_string(s), s);
  for (std::uint32_t t = 0; t < 3; ++t) b.thread(t, "t" + std::to_string(t));
  std::vector<std::uint64_t> live[2];
  std::uint64_t bump[2] = {spaces[0].begin, spaces[1].begin};
  // Bump allocation in a space, wrapping to its start (reuse of addresses nobody freed).
  const auto next_addr = [&](int sp, std::uint64_t size) {
    if (bump[sp] + size > spaces[sp].end) bump[sp] = spaces[sp].begin + g * pick(64);
    const std::uint64_t a = bump[sp];
    bump[sp] += size;
    return a;
  };
  const auto alloc = [&](int sp) {
    const std::uint64_t size = g * (2 + pick(30));
    const std::uint64_t a = pick(40) == 0 && !live[sp].empty() ? live[sp][pick(live[sp].size())] : next_addr(sp, size);
    b.alloc(static_cast<std::uint32_t>(pick(3)), 1 + static_cast<std::uint32_t>(pick(5)), 1 + static_cast<std::uint32_t>(pick(3)), a, size);
    live[sp].push_back(a);
  };
  const auto any_live = [&](int sp) { return live[sp].empty() ? spaces[sp].begin : live[sp][pick(live[sp].size())]; };
  for (int r = 0; r < shape.rounds; ++r) {
    for (int i = 0; i < shape.allocs_per_round; ++i) {
      alloc(pick(4) == 0 ? 1 : 0);
      if (pick(60) == 0) b.stale(any_live(0), 0);
      if (shape.outside_gc && pick(150) == 0) b.free(any_live(static_cast<int>(pick(2))));  // outside any GC
      if (shape.outside_gc && pick(300) == 0) b.move(any_live(0), next_addr(1, 64));
    }
    b.gc_begin(pick(3) == 0 ? trace::GcKind::kMinor : trace::GcKind::kFull);
    for (int sp = 0; sp < 2; ++sp) {
      // The epoch's bits, as one to three records (a dump split by the writer).
      std::vector<std::uint64_t> bits;
      for (std::uint64_t a : live[sp])
        if (pick(3) != 0) bits.push_back(a);
      bits.push_back(spaces[sp].begin + g * pick(1000));  // maybe nobody there
      std::shuffle(bits.begin(), bits.end(), rng);
      const std::size_t parts = 1 + pick(3);
      for (std::size_t p = 0; p < parts; ++p) {
        std::vector<std::uint64_t> part(bits.begin() + static_cast<std::ptrdiff_t>(bits.size() * p / parts),
                                        bits.begin() + static_cast<std::ptrdiff_t>(bits.size() * (p + 1) / parts));
        if (!part.empty()) b.bitmap(part, static_cast<std::uint32_t>(sp));
      }
    }
    // A copying GC: what it does not move out of the young space dies with the whole space, as
    // one free range (most of every shard's map goes at once).
    const bool copying = pick(3) == 0;
    if (!copying && pick(4) == 0) alloc(0);  // a concurrent GC's allocation, between its bits and its frees
    std::vector<std::uint64_t> survivors;
    for (std::uint64_t a : live[0]) {
      const std::uint64_t what = pick(10);
      if (copying && (what < 5 || what == 9)) continue;
      if (what < 5) {
        b.free(a);
      } else if (what < 8) {
        const std::uint64_t to = next_addr(1, g * (2 + pick(30)));
        b.move(a, to);
        live[1].push_back(to);
      } else if (what == 8 && !live[1].empty()) {
        b.move(a, live[1][pick(live[1].size())]);  // onto another object's address
      } else {
        survivors.push_back(a);
      }
    }
    live[0] = survivors;
    if (pick(2) == 0) {  // a sliding compaction of part of the old space
      const std::uint64_t from = spaces[1].begin + g * (64 + pick(2000)), bytes = g * (64 + pick(20000));
      b.move_range(from, from - g * pick(64), bytes);
    }
    if (copying) b.free_range(spaces[0].begin, spaces[0].end - spaces[0].begin);  // nothing survived in it
    if (pick(3) == 0) b.free_range(spaces[1].begin + g * pick(5000), g * (8 + pick(200)));  // a few of the old
    b.free(spaces[1].begin + g * pick(5000));  // maybe nobody there
    for (int i = 0; i < 1 + static_cast<int>(pick(3)); ++i) {
      if (pick(3) == 0) alloc(0);  // allocated during the GC
      if (pick(3) == 0) b.stale(any_live(1), 0);
    }
    std::shuffle(live[1].begin(), live[1].end(), rng);
    live[1].resize(live[1].size() * 9 / 10);
    b.gc_end();
  }
  if (shape.end) b.end();
  return b.take();
}

TraceAnalysis run(const std::vector<std::byte>& data, unsigned workers) {
  AnalyzerOptions o;
  o.workers = workers;
  auto r = analyze(data, o);
  if (!r.ok()) FAIL(r.error().message);
  return std::move(*r);
}

}  // namespace

TEST_CASE("analyzer: any number of workers gives the one-worker result (random traces)", "[analysis][workers]") {
  const std::uint64_t seeds = objprof::test::scaled(40, 8);
  for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
    Shape shape;
    shape.rounds = 2 + static_cast<int>(seed % 4);
    shape.allocs_per_round = seed % 5 == 0 ? 4000 : 200 + static_cast<int>(seed * 37 % 400);  // some span many batches
    shape.granule = seed % 7 == 3 ? 16 : 8;
    shape.end = seed % 6 != 0;
    shape.outside_gc = seed % 2 == 0;
    const std::vector<std::byte> data = random_trace(seed, shape);
    const TraceAnalysis one = run(data, 1);
    REQUIRE(one.stats.inferred_deaths > 0);  // the traces do exercise the hard cases
    REQUIRE(one.stats.unknown_frees > 0);
    REQUIRE(one.gcs.size() == static_cast<std::size_t>(shape.rounds));
    for (unsigned workers : {2u, 3u, 7u}) {
      INFO("seed " << seed << ", " << workers << " workers");
      require_same(one, run(data, workers));
    }
  }
}

TEST_CASE("analyzer: a trace of many batches gives the one-worker result with any number of workers", "[analysis][workers]") {
  // More batches than the back's queue has slots, most of them applied by whichever shard is
  // free (Back::submit), so the queue's slots are reused many times over.
  Shape shape;
  shape.rounds = 8;
  shape.allocs_per_round = 17000;
  shape.outside_gc = false;
  const std::vector<std::byte> data = random_trace(4242, shape);
  const TraceAnalysis one = run(data, 1);
  REQUIRE(one.stats.allocs > 2 * analysis::internal::Back::kQueueSlots * analysis::internal::kBatchCapacity);
  for (unsigned workers : {2u, 3u, 7u}) {
    INFO(workers << " workers");
    require_same(one, run(data, workers));
  }
}

TEST_CASE("analyzer: a truncated trace gives the same result with any number of workers", "[analysis][workers]") {
  Shape shape;
  shape.rounds = 3;
  shape.allocs_per_round = 3000;
  std::vector<std::byte> data = random_trace(99, shape);
  data.resize(data.size() * 2 / 3);
  const TraceAnalysis one = run(data, 1);
  REQUIRE(one.truncated);
  require_same(one, run(data, 2));
  require_same(one, run(data, 4));
}

TEST_CASE("analyzer: the incremental Analyzer agrees with analyze() on many workers", "[analysis][workers]") {
  Shape shape;
  shape.allocs_per_round = 2500;
  const std::vector<std::byte> data = random_trace(7, shape);
  Analyzer an;
  auto summary = trace::read(data, an.visitor());
  REQUIRE(summary.ok());
  auto inc = an.take(*summary);
  REQUIRE(inc.ok());
  require_same(*inc, run(data, 3));
}

TEST_CASE("crew: every task of every phase runs exactly once, whoever joins", "[analysis][workers]") {
  const int phases = static_cast<int>(objprof::test::scaled(400, 8));
  for (unsigned helpers : {0u, 1u, 3u}) {
    analysis::internal::Crew crew(helpers);
    std::atomic<bool> stop{false};
    // A thread that joins whenever it sees a phase open, like the analyzer's reader.
    std::thread joiner([&] {
      while (!stop.load()) {
        const std::uint32_t seen = crew.signal();
        if (!crew.help() && !stop.load()) crew.wait(seen);
      }
    });
    for (int p = 0; p < phases; ++p) {
      const unsigned tasks = 1 + static_cast<unsigned>(p % 13);
      std::vector<int> runs(tasks, 0);  // each slot written by the one thread that took the task
      crew.run(tasks, [&](unsigned i) { ++runs[i]; });
      REQUIRE(std::all_of(runs.begin(), runs.end(), [](int n) { return n == 1; }));
    }
    stop.store(true);
    crew.poke();
    joiner.join();
  }
}

TEST_CASE("crew: joining threads do the background work between phases, and clearing it waits for them", "[analysis][workers]") {
  const int units = static_cast<int>(objprof::test::scaled(20000, 8));
  for (unsigned helpers : {0u, 1u, 3u}) {
    analysis::internal::Crew crew(helpers);
    std::atomic<int> next{0}, inside{0};
    std::vector<int> done(static_cast<std::size_t>(units), 0);  // each unit written by the one thread that took it
    const std::function<bool()> work = [&] {
      inside.fetch_add(1);
      const int i = next.fetch_add(1);
      if (i < units) ++done[static_cast<std::size_t>(i)];
      inside.fetch_sub(1);
      return i < units;
    };
    std::atomic<bool> stop{false};
    std::thread joiner([&] {  // joins like the analyzer's reader
      while (!stop.load()) {
        const std::uint32_t seen = crew.signal();
        if (!crew.help() && !stop.load()) crew.wait(seen);
      }
    });
    crew.set_background(&work);
    crew.poke();
    // Phases still run each of their tasks once while the background work goes on.
    for (int p = 0; p < 40; ++p) {
      std::vector<int> runs(5, 0);
      crew.run(5, [&](unsigned i) { ++runs[i]; });
      REQUIRE(std::all_of(runs.begin(), runs.end(), [](int n) { return n == 1; }));
    }
    while (crew.help()) {
    }
    crew.set_background(nullptr);
    REQUIRE(inside.load() == 0);  // nobody is still in it once set_background returns
    REQUIRE(next.load() >= units);
    REQUIRE(std::all_of(done.begin(), done.end(), [](int n) { return n == 1; }));
    stop.store(true);
    crew.poke();
    joiner.join();
  }
}

}  // namespace test_sharded_analysis
