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

#include <objprof/objprof.h>
#include <objprof/trace_reader.h>

#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

namespace objprof::sim {
namespace {

struct Run {
  std::int64_t result = 0;
  InterpStats interp;
  std::vector<std::vector<std::pair<std::uint64_t, std::uint64_t>>> bitmaps;  // per epoch
};

Run run(const LoadedWorkload& wl, std::uint64_t size, std::uint64_t heap_bytes, GcPolicy gc, ir::PassKind pass,
        bool alloc_marks, bool jit, bool roots_marked = false, bool heap_marks_roots = false) {
  ProfilerOptions po;
  po.default_leak_printer = false;
  po.on_leak = {};
  po.mark_on_alloc = true;
  auto sink = std::make_unique<MemorySink>();
  MemorySink* bytes = sink.get();
  po.trace_sink = std::move(sink);
  auto prof = Profiler::create(std::move(po));
  REQUIRE(prof.ok());
  HeapOptions ho;
  ho.gc = gc;
  ho.heap_bytes = heap_bytes;
  ho.mark_frame_roots = heap_marks_roots || roots_marked;
  auto heap = Heap::create(ho, prof->get());
  REQUIRE(heap.ok());
  InterpOptions io;
  io.pass = pass;
  io.allocation_marks = alloc_marks;
  io.roots_marked = roots_marked;
  io.barrier = BarrierConfig{true, MarkMode::kRacy, false};
  io.size = size;
  if (jit) io.jit = jit::make_jit();
  auto interp = Interpreter::create(wl.module, **heap, prof->get(), io);
  REQUIRE(interp.ok());
  auto r = (*interp)->run("main");
  if (!r.ok()) FAIL(r.error().message);
  Run out;
  out.result = *r;
  out.interp = (*interp)->stats();
  REQUIRE((*prof)->protocol_status().ok());
  if (ho.mark_frame_roots) CHECK((*prof)->stats().root_marks > 0);
  REQUIRE((*prof)->finish().ok());
  auto contents = trace::load(bytes->data());
  REQUIRE(contents.ok());
  for (const auto& b : contents->bitmaps) out.bitmaps.push_back(b.words);
  return out;
}

}  // namespace

TEST_CASE("sim: the allocation-marks model removes more barriers and loses no mark", "[sim][elim]") {
  std::uint64_t exact_kept = 0, model_kept = 0;
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
      const std::uint64_t heap = gc == GcPolicy::kSemiSpace ? w.heap : w.ms_heap;
      const Run reference = run(*wl, w.size, heap, gc, ir::PassKind::kNone, false, false);
      const Run exact = run(*wl, w.size, heap, gc, ir::PassKind::kGlobal, false, false);
      const Run model = run(*wl, w.size, heap, gc, ir::PassKind::kGlobal, true, false);
      REQUIRE(reference.bitmaps.size() > 1);
      CHECK(model.result == reference.result);
      CHECK(model.bitmaps == reference.bitmaps);
      CHECK(exact.bitmaps == reference.bitmaps);
      CHECK(model.interp.barriers_executed <= exact.interp.barriers_executed);
      CHECK(model.interp.static_kept <= exact.interp.static_kept);
      exact_kept += exact.interp.barriers_executed;
      model_kept += model.interp.barriers_executed;
      if (jit::jit_supported() && gc == GcPolicy::kSemiSpace) {
        const Run compiled = run(*wl, w.size, heap, gc, ir::PassKind::kGlobal, true, true);
        CHECK(compiled.bitmaps == reference.bitmaps);
      }
    }
  }
  CHECK(model_kept < exact_kept);
}

TEST_CASE("sim: the root-marks model removes more barriers and loses no mark", "[sim][elim]") {
  std::uint64_t alloc_kept = 0, roots_kept = 0, alloc_static = 0, roots_static = 0;
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
      const std::uint64_t heap = gc == GcPolicy::kSemiSpace ? w.heap : w.ms_heap;
      // The same VM in every run: allocations and collections mark; only the pass differs.
      const Run reference = run(*wl, w.size, heap, gc, ir::PassKind::kNone, false, false, false, true);
      const Run alloc = run(*wl, w.size, heap, gc, ir::PassKind::kGlobal, true, false, false, true);
      const Run model = run(*wl, w.size, heap, gc, ir::PassKind::kGlobal, true, false, true);
      REQUIRE(reference.bitmaps.size() > 1);
      CHECK(model.result == reference.result);
      CHECK(alloc.bitmaps == reference.bitmaps);
      CHECK(model.bitmaps == reference.bitmaps);
      CHECK(model.interp.barriers_executed <= alloc.interp.barriers_executed);
      CHECK(model.interp.static_kept <= alloc.interp.static_kept);
      alloc_kept += alloc.interp.barriers_executed;
      roots_kept += model.interp.barriers_executed;
      alloc_static += alloc.interp.static_kept;
      roots_static += model.interp.static_kept;
      if (jit::jit_supported() && gc == GcPolicy::kSemiSpace) {
        const Run compiled = run(*wl, w.size, heap, gc, ir::PassKind::kGlobal, true, true, true);
        CHECK(compiled.bitmaps == reference.bitmaps);
        CHECK(compiled.result == reference.result);
      }
    }
  }
  INFO("executed barriers: allocation marks " << alloc_kept << ", + root marks " << roots_kept);
  CHECK(roots_kept < alloc_kept);
  CHECK(roots_static < alloc_static);
}

TEST_CASE("sim: the root-marks model needs a heap that marks its frames' roots", "[sim][elim]") {
  auto wl = load_workload("listleak");
  REQUIRE(wl.ok());
  ProfilerOptions po;
  po.default_leak_printer = false;
  po.on_leak = {};
  auto prof = Profiler::create(std::move(po));
  REQUIRE(prof.ok());
  HeapOptions ho;
  ho.heap_bytes = 128 << 10;
  auto heap = Heap::create(ho, prof->get());
  REQUIRE(heap.ok());
  InterpOptions io;
  io.pass = ir::PassKind::kGlobal;
  io.roots_marked = true;
  auto interp = Interpreter::create(wl->module, **heap, prof->get(), io);
  REQUIRE_FALSE(interp.ok());
  CHECK(interp.error().message.find("without mark_frame_roots") != std::string::npos);
}

TEST_CASE("sim: the allocation-marks model needs a profiler that marks allocations", "[sim][elim]") {
  auto wl = load_workload("listleak");
  REQUIRE(wl.ok());
  ProfilerOptions po;
  po.default_leak_printer = false;
  po.on_leak = {};
  auto prof = Profiler::create(std::move(po));
  REQUIRE(prof.ok());
  HeapOptions ho;
  ho.heap_bytes = 128 << 10;
  auto heap = Heap::create(ho, prof->get());
  REQUIRE(heap.ok());
  InterpOptions io;
  io.pass = ir::PassKind::kGlobal;
  io.allocation_marks = true;
  auto interp = Interpreter::create(wl->module, **heap, prof->get(), io);
  REQUIRE_FALSE(interp.ok());
  CHECK(interp.error().message.find("without mark_on_alloc") != std::string::npos);
}

}  // namespace objprof::sim
