// The staleness clock's second condition against a reference model: random runs with several
// mutator threads that are scheduled or not from epoch to epoch (a paused thread neither
// allocates nor accesses), allocate random amounts, touch random objects (their own and other
// threads'), and detach (their objects then age on the program's clock). After every GC the
// profiler must report exactly the objects the model finds stale: idle for GC_K epochs and for
// at least as many bytes of their owner's allocation as the owner's busiest epoch. At the end
// the offline analyzer, reading the run's trace, must find the same objects stale.
#include "test_support.h"

#include <objprof/analysis/analyzer.h>
#include <objprof/analysis/staleness.h>
#include <objprof/barrier.h>
#include <objprof/profiler.h>
#include <objprof/trace_sink.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <vector>

namespace test_progress_clock {

using namespace objprof;
using objprof::test::FakeHeap;

namespace {

struct ModelThread {
  ThreadState* state = nullptr;
  bool attached = false, detached = false;
  std::uint64_t detach_epoch = 0;  // detached during this epoch (before its gc_begin)
  std::uint64_t bytes = 0;         // allocated so far
  std::map<std::uint64_t, std::uint64_t> at_gc;  // epoch -> bytes at its gc_begin
  std::uint64_t busiest = 0;
};

struct ModelObject {
  Address addr;
  std::uint64_t size;
  std::size_t owner;
  std::uint64_t last_access;
  bool reported = false;
};

// A clock's value at gc_begin(epoch): 0 before its first value.
std::uint64_t value_at(const std::map<std::uint64_t, std::uint64_t>& at_gc, std::uint64_t epoch) {
  auto it = at_gc.upper_bound(epoch);
  return it == at_gc.begin() ? 0 : std::prev(it)->second;
}

struct ModelTally {
  std::uint64_t reported = 0, held_back = 0;  // held back: idle for GC_K epochs, not enough progress
};

void run_clock_model(std::uint64_t seed, ModelTally& tally) {
  constexpr std::uint64_t kHeap = 8 << 20, kTracked = 256;
  constexpr std::uint32_t kK = 3;
  constexpr std::size_t kThreads = 4;
  FakeHeap heap(kHeap);
  std::set<std::pair<Address, std::uint64_t>> got;
  ProfilerOptions o;
  o.stale_after_epochs = kK;
  o.min_tracked_size = kTracked;
  o.default_leak_printer = false;
  o.on_leak = [&](const LeakReport& r) { got.insert({r.addr, r.epoch}); };
  auto sink = std::make_unique<MemorySink>();
  MemorySink* trace = sink.get();
  o.trace_sink = std::move(sink);
  auto prof = std::move(*Profiler::create(std::move(o)));
  REQUIRE(prof->add_space(heap.space()).ok());
  REQUIRE(prof->define_type({1, "Obj", 0, false}).ok());
  REQUIRE(prof->define_site({1, 0, "model", 0}).ok());

  std::mt19937_64 rng(seed);
  std::vector<ModelThread> threads(kThreads);
  std::vector<ModelObject> objects;
  std::map<std::uint64_t, std::uint64_t> program_at_gc;
  std::uint64_t program_busiest = 0, program_bytes = 0, bump = 0;
  std::uint32_t next_id = 1;
  auto attach = [&](ModelThread& t) {
    t = ModelThread{};
    t.state = *prof->attach_thread(next_id++, "mutator");
    t.attached = true;
  };
  for (auto& t : threads) attach(t);

  for (std::uint64_t e = 0; e < 60; ++e) {
    // The mutator phase: each thread runs with probability 1/2, sometimes paused for long.
    for (std::size_t ti = 0; ti < kThreads; ++ti) {
      ModelThread& t = threads[ti];
      if (!t.attached || rng() % 2) continue;
      const std::uint64_t n = rng() % 12;
      for (std::uint64_t i = 0; i < n && bump + 2048 < kHeap; ++i) {
        const std::uint64_t size = (rng() % 4 == 0) ? 64 : 256 + 8 * (rng() % 200);
        const Address a = heap.at(bump);
        bump += size;
        prof->on_alloc(*t.state, 1, 1, a, size);
        t.bytes += size;
        program_bytes += size;
        if (size >= kTracked) objects.push_back({a, size, ti, e});
      }
      // Touch a few objects, recent ones more often (a working set), anyone's.
      for (int i = 0; i < 6 && !objects.empty(); ++i) {
        const std::size_t span = std::min<std::size_t>(objects.size(), 40);
        ModelObject& m = objects[objects.size() - 1 - rng() % span];
        access<>(*t.state, prof->bitmap(0), m.addr);
        m.last_access = e;
      }
    }
    // Now and then a thread ends; a new one takes its place (and its clock slot).
    if (e % 7 == 6) {
      ModelThread& t = threads[rng() % kThreads];
      if (t.attached) {
        prof->detach_thread(*t.state);
        const std::size_t index = static_cast<std::size_t>(&t - threads.data());
        // Its objects now belong to a ghost that ages on the program's clock.
        threads.push_back(t);
        ModelThread& ghost = threads.back();
        ghost.attached = false;
        ghost.detached = true;
        ghost.detach_epoch = e;
        for (ModelObject& m : objects)
          if (m.owner == index) m.owner = threads.size() - 1;
        attach(threads[index]);
      }
    }
    REQUIRE(prof->gc_begin(GcKind::kFull).ok());
    program_busiest = std::max(program_busiest, program_bytes - value_at(program_at_gc, e));
    program_at_gc[e] = program_bytes;
    for (ModelThread& t : threads) {
      if (!t.attached) continue;
      t.busiest = std::max(t.busiest, t.bytes - value_at(t.at_gc, e));
      t.at_gc[e] = t.bytes;
    }
    REQUIRE(prof->gc_end().ok());

    std::set<std::pair<Address, std::uint64_t>> want;
    for (ModelObject& m : objects) {
      if (m.reported || e - m.last_access < kK) continue;
      const ModelThread& owner = threads[m.owner];
      const bool program = owner.detached;
      const auto& clock = program ? program_at_gc : owner.at_gc;
      const std::uint64_t progress = value_at(clock, e) - value_at(clock, m.last_access);
      if (progress < (program ? program_busiest : owner.busiest)) {
        ++tally.held_back;
        continue;
      }
      ++tally.reported;
      m.reported = true;
      want.insert({m.addr, e});
    }
    INFO("seed " << seed << ", epoch " << e);
    REQUIRE(got == want);
    got.clear();
  }
  std::set<Address> online;
  for (const LeakReport& r : prof->possible_leaks()) online.insert(r.addr);
  REQUIRE(prof->finish().ok());
  auto a = analysis::analyze(trace->data());
  REQUIRE(a.ok());
  std::set<Address> offline;
  for (analysis::ObjectId id = 0; id < a->objects.size(); ++id) {
    const analysis::ObjectMetrics m = analysis::object_metrics(*a, id);
    if (m.size >= kTracked && analysis::is_stale(*a, m, analysis::StaleRule{kK, analysis::StaleRule::kAutoBytes}))
      offline.insert(a->objects.last_addr(id));
  }
  INFO("seed " << seed << ": online and offline stale sets at the end");
  CHECK(offline == online);
  CHECK(!online.empty());
}

}  // namespace

TEST_CASE("Staleness clock: reports match a model of per-thread progress, pauses and detaches", "[core][stale][clock]") {
  const auto runs = static_cast<std::uint64_t>(objprof::test::scaled(40, 8));
  ModelTally tally;
  for (std::uint64_t seed = 1; seed <= runs; ++seed) run_clock_model(seed, tally);
  // Both outcomes occur often, so the runs exercise the condition both ways.
  CHECK(tally.reported > 20 * runs);
  CHECK(tally.held_back > 20 * runs);
}

TEST_CASE("Staleness clock: the program's automatic threshold is its busiest epoch, 0 before any allocation",
          "[core][stale][clock]") {
  objprof::test::ProfilerRig rig(1 << 20, [](ProfilerOptions& o) { o.stale_after_bytes = ProfilerOptions::kAutoStaleBytes; });
  REQUIRE(rig.prof->define_type({1, "Obj", 0, false}).ok());
  REQUIRE(rig.prof->define_site({1, 0, "clock", 0}).ok());
  std::size_t bump = 0;
  auto alloc = [&](std::uint64_t size) {
    rig.prof->on_alloc(*rig.thread, 1, 1, rig.at(bump), size);
    bump += size;
  };
  // The program clock's threshold at the end of one more epoch.
  auto threshold_after_gc = [&] {
    rig.gc();
    return rig.prof->stats().stale_bytes_threshold;
  };
  // Nothing allocated yet: the busiest epoch allocated nothing, as the trace's analysis says.
  CHECK(threshold_after_gc() == 0);
  CHECK(threshold_after_gc() == 0);
  alloc(1024);
  alloc(2048);
  CHECK(threshold_after_gc() == 3072);
  alloc(1024);
  CHECK(threshold_after_gc() == 3072);
  alloc(4096);
  alloc(8);
  CHECK(threshold_after_gc() == 4104);
  const analysis::TraceAnalysis a = rig.analyze();
  CHECK(a.busiest_epoch_bytes == 4104);
}

}  // namespace test_progress_clock
