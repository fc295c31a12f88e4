// The global pass under the VM's promises on the sim (docs/elimination.md "Safepoint models"):
// - allocation marks (InterpOptions::allocation_marks): with the profiler marking every new
//   object, removing the barriers of a fresh object's first accesses loses no mark;
// - root marks (InterpOptions::roots_marked): with every collection marking what the frames
//   hold (HeapOptions::mark_frame_roots), keeping availability across GC points loses no mark.
// Every epoch's access bitmap must equal that of a run with no elimination at all (the same
// VM: the same allocation and root marks), under every collector, interpreted and compiled;
// and each model must actually remove barriers the exact model keeps.
#include "sim/heap.h"
#include "sim/interp.h"
#include "sim/jit/jit.h"
#include "sim/workloads.h"

#include "../test_env.h"
#include "sim_test_support.h"

#include <objprof/objprof.h>
#include <objprof/trace_reader.h>

#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

namespace objprof::sim::test_sim_alloc_marks {
namespace {

struct Run {
  std::int64_t result = 0;
  InterpStats interp;
  std::vector<std::vector<std::pair<std::uint64_t, std::uint64_t>>> bitmaps;  // per epoch
};

Run run(const LoadedWorkload& wl, std::uint64_t size, std::uint64_t heap_bytes, GcPolicy gc, ir::PassKind pass,
        bool alloc_marks, bool jit, bool roots_marked = false, bool heap_marks_roots = false) {
  MemorySink* bytes = nullptr;
  test::SimRig rig(
      heap_bytes,
      [&](ProfilerOptions& po) {
        po.mark_on_alloc = true;
        auto sink = std::make_unique<MemorySink>();
        bytes = sink.get();
        po.trace_sink = std::move(sink);
      },
      [&](HeapOptions& ho) {
        ho.gc = gc;
        ho.mark_frame_roots = heap_marks_roots || roots_marked;
      });
  Profiler* prof = rig.prof.get();
  InterpOptions io;
  io.pass = pass;
  io.allocation_marks = alloc_marks;
  io.roots_marked = roots_marked;
  io.barrier = BarrierConfig{true, MarkMode::kRacy, false};
  io.size = size;
  if (jit) io.jit = jit::make_jit();
  auto interp = Interpreter::create(wl.module, *rig.heap, prof, io);
  REQUIRE(interp.ok());
  auto r = (*interp)->run("main");
  if (!r.ok()) FAIL(r.error().message);
  Run out;
  out.result = *r;
  out.interp = (*interp)->stats();
  REQUIRE(prof->protocol_status().ok());
  if (rig.heap->options().mark_frame_roots) CHECK(prof->stats().root_marks > 0);
  REQUIRE(prof->finish().ok());
  auto contents = trace::load(bytes->data());
  REQUIRE(contents.ok());
  for (const auto& b : contents->bitmaps) out.bitmaps.push_back(b.words);
  return out;
}

// Every shipped workload at a size that collects several times, under every collector: fn(the
// workload, its size, the heap's bytes, the collector).
template <class Fn>
void for_each_workload_and_collector(Fn&& fn) {
  struct W {
    const char* name;
    std::uint64_t size, heap, ms_heap;  // semispace; mark-sweep fills its larger space later
  };
  const W ws[] = {{"listleak", 150, 256 << 10, 256 << 10}, {"swapleak", 300, 256 << 10, 256 << 10},
                  {"points", 60, 128 << 10, 128 << 10},    {"scimark", 32, 128 << 10, 64 << 10},
                  {"graph", 60, 64 << 10, 64 << 10},       {"requests", 60, 128 << 10, 128 << 10}};
  for (const W& w : ws) {
    auto wl = load_workload(w.name);
    REQUIRE(wl.ok());
    for (GcPolicy gc : kAllGcPolicies) {
      INFO(w.name << " " << gc_policy_name(gc));
      fn(*wl, w.size, gc == GcPolicy::kSemiSpace ? w.heap : w.ms_heap, gc);
    }
  }
}

}  // namespace

// What the pass may assume (the VM's promises).
struct Model {
  bool alloc_marks = false, roots_marked = false;
};

// Barriers executed and kept sites, summed over runs.
struct Kept {
  std::uint64_t executed = 0, sites = 0;
};

// `model` against `weaker` (a model with fewer promises) and against no elimination at all, on
// the same VM (allocations always mark; collections mark roots when the model needs it or
// `vm_marks_roots` says so): every epoch's bitmap and the result must be equal, and the model
// runs no more barriers and keeps no more sites than the weaker one, interpreted; compiled
// code under the model gives the same bitmaps too.
void check_model(const LoadedWorkload& wl, std::uint64_t size, std::uint64_t heap, GcPolicy gc, Model weaker,
                 Model model, bool vm_marks_roots, Kept& weaker_kept, Kept& model_kept) {
  const Run reference =
      run(wl, size, heap, gc, ir::PassKind::kNone, false, false, false, vm_marks_roots || model.roots_marked);
  const Run base = run(wl, size, heap, gc, ir::PassKind::kGlobal, weaker.alloc_marks, false, weaker.roots_marked,
                       vm_marks_roots || model.roots_marked);
  const Run with = run(wl, size, heap, gc, ir::PassKind::kGlobal, model.alloc_marks, false, model.roots_marked,
                       vm_marks_roots);
  REQUIRE(reference.bitmaps.size() > 1);
  CHECK(with.result == reference.result);
  CHECK(base.bitmaps == reference.bitmaps);
  CHECK(with.bitmaps == reference.bitmaps);
  CHECK(with.interp.barriers_executed <= base.interp.barriers_executed);
  CHECK(with.interp.static_kept <= base.interp.static_kept);
  weaker_kept.executed += base.interp.barriers_executed;
  weaker_kept.sites += base.interp.static_kept;
  model_kept.executed += with.interp.barriers_executed;
  model_kept.sites += with.interp.static_kept;
  if (jit::jit_supported() && gc == GcPolicy::kSemiSpace) {
    const Run compiled =
        run(wl, size, heap, gc, ir::PassKind::kGlobal, model.alloc_marks, true, model.roots_marked, vm_marks_roots);
    CHECK(compiled.bitmaps == reference.bitmaps);
    CHECK(compiled.result == reference.result);
  }
}

TEST_CASE("sim: the allocation-marks model removes more barriers and loses no mark", "[sim][elim][single-threaded]") {
  Kept exact, model;
  for_each_workload_and_collector([&](const LoadedWorkload& wl, std::uint64_t size, std::uint64_t heap, GcPolicy gc) {
    check_model(wl, size, heap, gc, Model{}, Model{true, false}, false, exact, model);
  });
  CHECK(model.executed < exact.executed);
}

TEST_CASE("sim: the root-marks model removes more barriers and loses no mark", "[sim][elim][single-threaded]") {
  Kept alloc, roots;
  for_each_workload_and_collector([&](const LoadedWorkload& wl, std::uint64_t size, std::uint64_t heap, GcPolicy gc) {
    check_model(wl, size, heap, gc, Model{true, false}, Model{true, true}, true, alloc, roots);
  });
  INFO("executed barriers: allocation marks " << alloc.executed << ", + root marks " << roots.executed);
  CHECK(roots.executed < alloc.executed);
  CHECK(roots.sites < alloc.sites);
}

TEST_CASE("sim: each model is refused when the VM does not keep its promise", "[sim][elim]") {
  auto wl = load_workload("listleak");
  REQUIRE(wl.ok());
  struct Case {
    bool alloc_marks, roots_marked;
    const char* says;
  };
  // A profiler without mark_on_alloc and a heap without mark_frame_roots.
  for (const Case& c : {Case{true, false, "without mark_on_alloc"}, Case{false, true, "without mark_frame_roots"}}) {
    test::SimRig rig(128 << 10);
    InterpOptions io;
    io.pass = ir::PassKind::kGlobal;
    io.allocation_marks = c.alloc_marks;
    io.roots_marked = c.roots_marked;
    auto interp = Interpreter::create(wl->module, *rig.heap, rig.prof.get(), io);
    REQUIRE_FALSE(interp.ok());
    CHECK(interp.error().message.find(c.says) != std::string::npos);
  }
}

}  // namespace objprof::sim
