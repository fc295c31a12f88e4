// The analyzer against the simulated runtime's own ground truth (sim/ is an embedder; this
// test reads its public surface only): every GC's freed and moved counts (Heap::on_gc), the
// totals (HeapStats), the exact set of objects in the heap at the end (Heap::for_each_object:
// address, type, size), and the profiler's harvested bits. And the acceptance check: the
// report on a listleak trace ranks the leaking site first, with every collector.
#include "sim/heap.h"
#include "sim/interp.h"
#include "sim/workloads.h"

#include "../test_env.h"

#include <objprof/analysis/analyzer.h>
#include <objprof/analysis/report.h>
#include <objprof/analysis/report_text.h>
#include <objprof/profiler.h>

#include <catch2/catch.hpp>

#include <set>
#include <tuple>
#include <utility>

namespace test_sim_truth {

using namespace objprof;
using namespace objprof::analysis;

namespace {

struct SimRun {
  std::vector<std::byte> trace;
  std::vector<sim::GcInfo> gcs;
  sim::HeapStats heap;
  ProfilerStats prof;
  std::set<std::tuple<std::uint64_t, std::string, std::uint64_t>> live;  // (address, type, size)
  bool semispace_with_ranges = false;  // a semispace heap reporting its evacuated half as one range
};

SimRun run_sim(const std::string& workload, sim::GcPolicy gc, std::uint64_t size, std::uint64_t heap_bytes, std::uint32_t threads = 1,
               bool free_ranges = true, bool move_ranges = true) {
  auto wl = sim::load_workload(workload);
  REQUIRE(wl.ok());
  auto sink = std::make_unique<MemorySink>();
  MemorySink* raw = sink.get();
  ProfilerOptions po;
  po.trace_sink = std::move(sink);
  po.default_leak_printer = false;
  po.on_leak = {};
  auto prof = Profiler::create(std::move(po));
  REQUIRE(prof.ok());
  sim::HeapOptions ho;
  ho.gc = gc;
  ho.heap_bytes = heap_bytes;
  ho.free_ranges = free_ranges;
  ho.move_ranges = move_ranges;
  auto heap = sim::Heap::create(ho, prof->get());
  REQUIRE(heap.ok());
  SimRun out;
  out.semispace_with_ranges = gc == sim::GcPolicy::kSemiSpace && free_ranges;
  (*heap)->on_gc = [&](const sim::GcInfo& g) { out.gcs.push_back(g); };
  sim::InterpOptions io;
  io.size = size;
  io.threads = threads;
  io.barrier = {true, MarkMode::kAtomic, false};
  auto interp = sim::Interpreter::create(wl->module, **heap, prof->get(), io);
  REQUIRE(interp.ok());
  auto result = (*interp)->run("main");
  if (!result.ok()) FAIL(result.error().message);
  (*heap)->for_each_object([&](Address a) {
    out.live.emplace(a, (*heap)->type_of(a).name, (*heap)->object_size(a));
  });
  out.heap = (*heap)->stats();
  REQUIRE((*prof)->finish().ok());
  out.prof = (*prof)->stats();
  out.trace = raw->take();
  return out;
}

void check_against_truth(const SimRun& run, const TraceAnalysis& a) {
  CHECK(a.complete);
  CHECK(a.objects.size() == run.heap.objects_allocated);
  CHECK(a.total_bytes == run.heap.bytes_allocated);
  REQUIRE(a.gcs.size() == run.gcs.size());
  for (std::size_t i = 0; i < a.gcs.size(); ++i) {
    INFO("GC " << i);
    CHECK(a.gcs[i].freed_objects == run.gcs[i].freed_objects);
    CHECK(a.gcs[i].freed_bytes == run.gcs[i].freed_bytes);
    CHECK(a.gcs[i].moved_objects == run.gcs[i].moved_objects);
  }
  CHECK(a.stats.frees + a.stats.range_freed == run.heap.objects_freed);
  // The rest moved in runs (on_move_range): the GCs' moved_objects above count them all.
  CHECK(a.stats.moves + 2 * a.stats.move_ranges <= run.heap.objects_moved);
  CHECK(a.stats.marked_bits == run.prof.bits_harvested);
  CHECK(a.stats.unresolved_bits == 0);  // every access bit names the object that was there
  CHECK(a.stats.unknown_frees == 0);
  CHECK(a.stats.unknown_moves == 0);
  CHECK(a.stats.inferred_deaths == 0);
  std::set<std::tuple<std::uint64_t, std::string, std::uint64_t>> live;
  for (ObjectId o = 0; o < a.objects.size(); ++o)
    if (a.objects.alive(o)) live.emplace(a.objects.last_addr(o), a.type_of(o).name, a.objects.size_of(o));
  CHECK(live.size() == run.live.size());
  CHECK(live == run.live);
  CHECK(a.live_objects == run.live.size());
  // The sim reports every death and move, so the stale tracker never finds a start claimed
  // twice; and without the hook checks (whose out-of-line hooks log every range move) the hooks
  // card every move, so no GC falls back to the index of the records (ctest runs these tests
  // both ways: "sim ground truth ... with the hook checks off").
  CHECK(run.prof.reused_starts == 0);
  if (!check_hooks_from_environment()) CHECK(run.prof.tracker_indexed_gcs == 0);
  // A semispace GC whose evacuated half is one free range goes by its runs (sweep_runs) when
  // tracked objects survive it: every such GC here, since the sim's reports qualify.
  if (run.semispace_with_ranges) CHECK(run.prof.tracker_run_gcs > 0);
}

// The run's trace analysed and checked against what the sim itself counted.
TraceAnalysis analyzed(const SimRun& run) {
  auto a = analyze(run.trace);
  REQUIRE(a.ok());
  check_against_truth(run, *a);
  return std::move(*a);
}

// The objects whose histories differ between the analyses of one run reported two ways: the
// epoch of death or any placement (each move's epoch and address). Each run maps its own heap,
// so addresses compare as offsets in the one space.
std::uint64_t histories_differ(const TraceAnalysis& a, const TraceAnalysis& b) {
  REQUIRE(a.objects.size() == b.objects.size());
  REQUIRE(a.header.spaces.size() == 1);
  REQUIRE(b.header.spaces.size() == 1);
  const std::uint64_t base_a = a.header.spaces[0].begin, base_b = b.header.spaces[0].begin;
  std::uint64_t differ = 0;
  for (ObjectId o = 0; o < a.objects.size(); ++o) {
    const std::vector<Placement> pa = a.objects.placements(o), pb = b.objects.placements(o);
    bool same = a.objects.death_epoch(o) == b.objects.death_epoch(o) && pa.size() == pb.size();
    for (std::size_t i = 0; same && i < pa.size(); ++i)
      same = pa[i].epoch == pb[i].epoch && pa[i].addr - base_a == pb[i].addr - base_b;
    differ += !same;
  }
  return differ;
}

}  // namespace

TEST_CASE("sim ground truth: listleak with every collector, and the leak ranked first", "[analysis][sim]") {
  for (sim::GcPolicy gc : sim::kAllGcPolicies) {
    INFO(sim::gc_policy_name(gc));
    const SimRun run = run_sim("listleak", gc, test::scaled(600, 2), 1 << 20);
    REQUIRE(run.gcs.size() >= 5);
    auto a = analyze(run.trace);
    REQUIRE(a.ok());
    check_against_truth(run, *a);
    ReportOptions o;
    o.top = 5;
    auto r = build_report(*a, o);
    REQUIRE(r.ok());
    REQUIRE_FALSE(r->leaks.sites.empty());
    const LeakSite& first = r->leaks.sites.front();
    CHECK(a->sites[first.site].method == "main");
    CHECK(a->sites[first.site].bytecode_offset == 4);  // the first `new ListLeak` (sim/workloads/README.md)
    CHECK(a->types[a->contexts[first.oldest_chain.context].type].name == "ListLeak");
    CHECK(first.objects == 1);
    CHECK(first.reported_online == 1);  // the profiler's online tracker agrees
    CHECK(first.oldest_chain.accessed == std::vector<EpochRun>{{0, 0}});
    if (gc == sim::GcPolicy::kSemiSpace) CHECK(first.oldest_chain.placements.size() == run.gcs.size() + 1);  // copied by every GC
    else CHECK(first.oldest_chain.placements.size() == 1);
    const std::string text = render_text(*r);
    CHECK(text.find("1  main@4") != std::string::npos);
  }
}

TEST_CASE("sim ground truth: swapleak, points and threads workloads", "[analysis][sim][mutators]") {
  struct W {
    const char* name;
    std::uint64_t size, heap;
    std::uint32_t threads;
  };
  // threads runs three mutators: one that finishes early must leave the profiler before the
  // heap, or a GC started by another mutator flushes its trace buffer while it detaches.
  const W ws[] = {{"swapleak", 500, 512 << 10, 1}, {"points", 200, 256 << 10, 1}, {"threads", 200, 512 << 10, 3}};
  for (const W& w : ws)
    for (sim::GcPolicy gc : sim::kAllGcPolicies) {
      INFO(w.name << " " << sim::gc_policy_name(gc));
      const SimRun run = run_sim(w.name, gc, w.size, w.heap, w.threads);
      auto a = analyze(run.trace);
      REQUIRE(a.ok());
      check_against_truth(run, *a);
      std::uint64_t threads_with_objects = 0;
      ReportOptions o;
      auto r = build_report(*a, o);
      REQUIRE(r.ok());
      for (const LiveSeries& s : r->thread_volume.series) threads_with_objects += s.allocated_objects > 0;
      CHECK(threads_with_objects == w.threads);
      if (std::string(w.name) == "swapleak") {
        REQUIRE_FALSE(r->leaks.sites.empty());
        CHECK(a->sites[r->leaks.sites.front().site].method == "SwapLeak.primary");
      }
    }
}

TEST_CASE("sim ground truth: mutators that finish at different times leave a consistent trace", "[analysis][sim][mutators]") {
  // The threads workload's mutators finish at different times while the others still allocate
  // and collect. Each run's trace must be accepted and rebuilt exactly: a finished mutator's
  // buffer is flushed once, before any later GC's records.
  for (int rep = 0; rep < 6; ++rep)
    for (sim::GcPolicy gc : sim::kAllGcPolicies) {
      INFO("rep " << rep << " " << sim::gc_policy_name(gc));
      const SimRun run = run_sim("threads", gc, 120, 256 << 10, 3);
      auto a = analyze(run.trace);
      REQUIRE(a.ok());
      check_against_truth(run, *a);
    }
}

TEST_CASE("sim ground truth: a fragmented mark-sweep heap that compacts (requests)", "[analysis][sim][fragmentation]") {
  // Sliding compaction moves objects onto memory that dead or moved objects held in the same
  // GC; the analyzer must follow every chain through it exactly.
  for (sim::GcPolicy gc : {sim::GcPolicy::kMarkSweep, sim::GcPolicy::kLazySweep}) {
    INFO(sim::gc_policy_name(gc));
    const SimRun run = run_sim("requests", gc, 600, 512 << 10);
    REQUIRE(run.heap.compactions > 0);
    REQUIRE(run.heap.objects_moved > 0);
    auto a = analyze(run.trace);
    REQUIRE(a.ok());
    check_against_truth(run, *a);
    std::uint64_t compacting = 0;
    for (std::size_t i = 0; i < run.gcs.size(); ++i) {
      compacting += run.gcs[i].compacted;
      CHECK((a->gcs[i].kind == trace::GcKind::kCompacting) == run.gcs[i].compacted);
    }
    CHECK(compacting == run.heap.compactions);
  }
}

TEST_CASE("sim ground truth: deaths reported as runs (on_free_range) read as one free per object does", "[analysis][sim]") {
  // The same run twice, the collectors reporting deaths as runs of dead cells or one object at
  // a time: every object must die in the same GC at the same address, the GCs free the same
  // counts, and the online tracker reports the same leaks.
  for (const char* workload : {"listleak", "requests"})
    for (sim::GcPolicy gc : sim::kAllGcPolicies) {
      INFO(workload << " " << sim::gc_policy_name(gc));
      const SimRun runs = run_sim(workload, gc, 400, 512 << 10, 1, true);
      const SimRun each = run_sim(workload, gc, 400, 512 << 10, 1, false);
      REQUIRE(runs.heap.objects_freed == each.heap.objects_freed);
      REQUIRE(runs.heap.objects_freed > 0);
      CHECK(each.prof.free_ranges == 0);
      CHECK(runs.prof.free_ranges > 0);
      CHECK(runs.prof.frees + runs.prof.free_ranges < each.prof.frees);  // fewer calls
      CHECK(runs.prof.leaks_reported == each.prof.leaks_reported);
      CHECK(runs.trace.size() < each.trace.size());
      const TraceAnalysis a = analyzed(runs), b = analyzed(each);
      CHECK(a.stats.free_ranges == runs.prof.free_ranges);
      CHECK(a.stats.range_freed + a.stats.frees == b.stats.frees);
      CHECK(histories_differ(a, b) == 0);
      REQUIRE(a.gcs.size() == b.gcs.size());
      for (std::size_t i = 0; i < a.gcs.size(); ++i) CHECK(a.gcs[i].freed_bytes == b.gcs[i].freed_bytes);
    }
}

TEST_CASE("sim ground truth: moves reported as runs (on_move_range) read as one move per object does", "[analysis][sim]") {
  // The same run twice, the collectors reporting their survivors' moves as runs (neighbours
  // copied or slid next to each other: one on_move_range) or one on_move per object: every
  // object must move through the same addresses and die in the same GC, and the online
  // tracker must report the same leaks. listleak copies its list in the list's own order (long
  // runs); requests fragments the mark-sweep heap until it compacts.
  struct Case {
    const char* workload;
    std::uint64_t size;
  };
  for (const Case c : {Case{"listleak", 400}, Case{"requests", 600}})
    for (sim::GcPolicy gc : sim::kAllGcPolicies) {
      INFO(c.workload << " " << sim::gc_policy_name(gc));
      const SimRun runs = run_sim(c.workload, gc, c.size, 512 << 10, 1, true, true);
      const SimRun each = run_sim(c.workload, gc, c.size, 512 << 10, 1, true, false);
      REQUIRE(runs.heap.objects_moved == each.heap.objects_moved);
      REQUIRE(runs.heap.compactions == each.heap.compactions);
      CHECK(each.prof.moves == each.heap.objects_moved);  // one call per moved object
      const TraceAnalysis a = analyzed(runs), b = analyzed(each);
      CHECK(b.stats.move_ranges == 0);
      CHECK(a.stats.moves + a.stats.move_ranges == runs.prof.moves);
      if (gc == sim::GcPolicy::kSemiSpace || runs.heap.compactions > 0) {
        REQUIRE(runs.heap.objects_moved > 0);
        CHECK(a.stats.move_ranges > 0);
        CHECK(runs.prof.moves < each.prof.moves);  // fewer calls
      }
      CHECK(runs.prof.leaks_reported == each.prof.leaks_reported);
      CHECK(runs.prof.tracked_live == each.prof.tracked_live);
      CHECK(histories_differ(a, b) == 0);
    }
}

}  // namespace test_sim_truth
