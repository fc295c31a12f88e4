// What a path from a GC root costs a GC (ProfilerOptions::heap_walker, the sim's SimHeapWalker).
//
//   gcpath/listleak<N>-<collector>/{off,nosuspect,found}
//       The collecting thread's CPU time of one GC (HeapStats::gc_cpu_seconds, profiler
//       included) on the heap listleak leaves behind (its list of N 296-byte nodes held by
//       static 0; N = 2000, its default, in 4 MiB, and 20000 in 32 MiB), stale-after 1 GC. Each iteration allocates one new
//       tracked object at a new allocation site, hangs it on the `name` field of the list's last
//       node (so a breadth-first search meets it after nearly every live object), runs one
//       untimed GC and then the timed one, in which the object becomes stale:
//       off = profiler without a heap walker (the stale check and report only);
//       found = with the walker: the timed GC also searches the path to the new object (a new
//       (site, type) pair every iteration) and keeps it;
//       nosuspect = with the walker, but nothing new is allocated: no new suspect, so the walker
//       must not be called (checked: the run fails if a search happened).
//   Counters: visited = objects the search visits to find the target.
#include "support/bench_main.h"
#include "support/workloads.h"

#include "sim/heap.h"
#include "sim/heap_walker.h"
#include "sim/interp.h"
#include "sim/workloads.h"

#include <objprof/objprof.h>

#include <memory>
#include <string>
#include <vector>

namespace {

using namespace objprof;

enum class Mode { kOff, kNoSuspect, kFound };

struct Slot final : sim::RootProvider {
  std::uint64_t array = 0;  // the list, kept current by the collector
  void visit_roots(const sim::RootFn& fn) override {
    if (array) fn(array);
  }
};

// The workload run to its end, then a bench mutator attached: declared in destruction order.
struct Setup {
  sim::SimHeapWalker walker;
  std::unique_ptr<Profiler> prof;
  std::unique_ptr<sim::Heap> heap;
  std::unique_ptr<sim::Interpreter> interp;
  Slot roots;
  sim::Mutator m;
  std::uint32_t node_type = 0;
  std::uint64_t name_slot = 0;
  ~Setup() {
    if (heap && m.thread) heap->detach_mutator(&m);
    walker.set_heap(nullptr);
  }
};

// Finds static 0 (the list) among the heap's named roots.
struct StaticList final : RootVisitor {
  Address list = 0;
  void root(RootKind kind, std::uint64_t, Address target) override {
    if (kind == RootKind::kStatic && list == 0) list = target;
  }
};

struct Scale {
  const char* name;
  std::uint64_t size;
  const char* heap;
};

std::string setup(Setup& s, const sim::LoadedWorkload* wl, const Scale& scale, sim::GcPolicy gc, Mode mode) {
  ProfilerOptions po;
  po.default_leak_printer = false;
  po.on_leak = {};
  po.stale_after_epochs = 1;
  po.stale_after_bytes = 0;  // GC_K alone: the timed GCs are forced, with no allocation between them
  if (mode != Mode::kOff) po.heap_walker = &s.walker;
  s.prof = std::move(*Profiler::create(std::move(po)));
  sim::HeapOptions ho;
  ho.heap_bytes = *sim::parse_size(scale.heap);
  ho.gc = gc;
  auto heap = sim::Heap::create(ho, s.prof.get());
  if (!heap.ok()) return heap.error().message;
  s.heap = std::move(*heap);
  s.walker.set_heap(s.heap.get());
  sim::InterpOptions io;
  io.size = scale.size;
  auto interp = sim::Interpreter::create(wl->module, *s.heap, s.prof.get(), io);
  if (!interp.ok()) return interp.error().message;
  s.interp = std::move(*interp);
  if (auto r = s.interp->run("main"); !r.ok()) return r.error().message;
  for (std::uint32_t t = 1; t < s.heap->type_count(); ++t)
    if (s.heap->type(t).name == "ListLeak") s.node_type = t;
  if (s.node_type == 0) return "no ListLeak type";
  const auto& names = s.heap->type(s.node_type).field_names;
  while (s.name_slot < names.size() && names[s.name_slot] != "name") ++s.name_slot;
  if (s.name_slot == names.size()) return "ListLeak has no name field";
  s.m.roots = &s.roots;
  s.m.thread = *s.prof->attach_thread(1000, "bench");
  s.heap->attach_mutator(&s.m);
  StaticList finder;
  if (!s.walker.begin_walk()) return "walker declined";
  s.walker.roots(finder);
  s.walker.end_walk();
  if (finder.list == 0) return "no list in static 0";
  s.roots.array = finder.list;
  // The workload's own leak and its idle nodes go stale here, and their pairs get their paths.
  for (int i = 0; i < 4; ++i)
    if (!s.heap->collect(s.m).ok()) return "collect failed";
  return {};
}

void gc_with_path(benchmark::State& state, const sim::LoadedWorkload* wl, Scale scale, sim::GcPolicy gc, Mode mode) {
  Setup s;
  if (std::string e = setup(s, wl, scale, gc, mode); !e.empty()) {
    state.SkipWithError(e.c_str());
    return;
  }
  const std::uint64_t length = sim::Heap::header(s.roots.array).word;
  std::uint32_t site = 1'000'000;
  std::uint64_t visited = 0;
  for (auto _ : state) {
    Address leak = 0;
    if (mode != Mode::kNoSuspect) {
      (void)s.prof->define_site({++site, 0, "bench.leak", site});
      auto a = s.heap->allocate(s.m, site, s.node_type);
      if (!a.ok()) {
        state.SkipWithError(a.error().message.c_str());
        return;
      }
      leak = *a;
      sim::Heap::store(sim::Heap::load(s.roots.array, length - 1), s.name_slot, leak);
    }
    if (!s.heap->collect(s.m).ok()) state.SkipWithError("collect failed");
    if (mode == Mode::kFound && visited == 0) {  // untimed: how far the search goes
      const Address target = sim::Heap::load(sim::Heap::load(s.roots.array, length - 1), s.name_slot);
      if (auto r = find_path(s.walker, target)) visited = r->objects_visited;
    }
    const std::uint64_t searches = s.prof->stats().path_searches;
    const double before = s.heap->stats().gc_cpu_seconds;
    if (!s.heap->collect(s.m).ok()) state.SkipWithError("collect failed");
    state.SetIterationTime(s.heap->stats().gc_cpu_seconds - before);
    const std::uint64_t searched = s.prof->stats().path_searches - searches;
    if (searched != (mode == Mode::kFound ? 1u : 0u)) {
      state.SkipWithError("the timed GC searched a different number of paths than its mode says");
      return;
    }
  }
  state.counters["visited"] = static_cast<double>(visited);
}

void register_all() {
  const sim::LoadedWorkload* wl = bench::load_workload_for("bench_path_search", "listleak");
  if (!wl) return;
  const std::pair<const char*, sim::GcPolicy> gcs[] = {{"semispace", sim::GcPolicy::kSemiSpace},
                                                      {"marksweep", sim::GcPolicy::kMarkSweep}};
  const std::pair<const char*, Mode> modes[] = {{"off", Mode::kOff}, {"nosuspect", Mode::kNoSuspect}, {"found", Mode::kFound}};
  const Scale scales[] = {{"listleak2k", 2000, "4M"}, {"listleak20k", 20000, "32M"}};
  for (const Scale& scale : scales)
    for (const auto& [gc_name, gc] : gcs)
      for (const auto& [mode_name, mode] : modes)
        benchmark::RegisterBenchmark((std::string("gcpath/") + scale.name + "-" + gc_name + "/" + mode_name).c_str(), gc_with_path,
                                     wl, scale, gc, mode)
            ->UseManualTime()
            ->Iterations(100)
            ->Unit(benchmark::kMicrosecond);
}

}  // namespace

int main(int argc, char** argv) {
  return objprof::bench::run_benchmarks(argc, argv, register_all, {{"gcpath", "off", {"nosuspect", "found"}}});
}
