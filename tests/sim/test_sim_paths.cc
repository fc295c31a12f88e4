// The sim's heap walker (sim/heap_walker.h) with the profiler: leak programs whose only path
// from a root is known — through a static and a field, through a stack frame of a caller, and
// through an array element — report exactly that path online, with every collector, in the
// interpreter and in compiled code; listleak's path is its list. A lazy sweep that ends while
// another mutator runs declines the walk.
#include "sim/heap.h"
#include "sim/heap_walker.h"
#include "sim/interp.h"
#include "sim/jit/jit.h"
#include "sim/workloads.h"

#include <objprof/ir/text.h>
#include <objprof/objprof.h>

#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <regex>
#include <string>
#include <vector>

namespace objprof::sim::test_sim_paths {
namespace {

// Types shared by the programs: Big is tracked (16 + 8 * 8 bytes >= min_tracked_size 64),
// everything else is smaller. Each program makes one Big reachable one way only, then runs
// sys.gc() v0 times without touching it.
constexpr const char* kTypes = R"(type Holder { id: int, payload: ref }
type Big { a: int, b: int, c: int, d: int, e: int, f: int, g: int, h: int }
)";

constexpr const char* kGcLoop = R"(
func churn(v0) regs 4 {
entry:
  v1 = const 0
  v2 = const 1
  goto loop
loop:
  v3 = cmp.lt v1, v0
  br v3, body, done
body:
  call sys.gc()
  v1 = add v1, v2
  goto loop
done:
  ret
}
)";

// static 0 -> Holder .payload -> Big
constexpr const char* kThroughStatic = R"(
func main(v0) regs 6 {
entry:
  v1 = new Holder
  v2 = const 0
  call.nogc sys.static_set(v2, v1)
  v3 = new Big
  putfield v1, Holder.payload, v3
  v1 = null
  v3 = null
  call churn(v0)
  ret
}
)";

// main's frame (v3) -> Big, while churn collects: main is frame 1, churn frame 0.
constexpr const char* kThroughFrame = R"(
func main(v0) regs 6 {
entry:
  v3 = new Big
  call churn(v0)
  ret
}
)";

// static 0 -> Big[] [2] -> Big
constexpr const char* kThroughArray = R"(
func main(v0) regs 6 {
entry:
  v2 = const 4
  v1 = newarray Big, v2
  v2 = const 0
  call.nogc sys.static_set(v2, v1)
  v3 = new Big
  v4 = const 2
  aput v1, v4, v3
  v1 = null
  v3 = null
  call churn(v0)
  ret
}
)";

struct Seen {
  Address addr = 0;
  std::string type;
  std::string path;  // format_path, "" when the report had none
  RootKind kind = RootKind::kOther;
  std::size_t steps = 0;
};

struct Run {
  std::vector<Seen> leaks;
  ProfilerStats stats;
};

Run run_program(const std::string& text, GcPolicy gc, bool compiled, std::uint64_t gcs = 8) {
  auto module = ir::parse_module(text);
  REQUIRE(module.ok());
  SimHeapWalker walker;
  Run out;
  ProfilerOptions po;
  po.stale_after_epochs = 2;
  po.stale_after_bytes = 0;  // GC_K alone: the programs force GCs without allocating between them
  po.min_tracked_size = 64;
  po.default_leak_printer = false;
  po.heap_walker = &walker;
  po.on_leak = [&](const LeakReport& r) {
    Seen s;
    s.addr = r.addr;
    s.type = std::string(r.type_name);
    if (r.path) {
      s.path = format_path(*r.path);
      s.kind = r.path->root_kind;
      s.steps = r.path->steps.size();
      // The path ends at the reported object: it is the pair's only stale object.
      CHECK(r.path->steps.back().addr == r.addr);
    }
    out.leaks.push_back(s);
  };
  auto prof = Profiler::create(std::move(po));
  REQUIRE(prof.ok());
  HeapOptions ho;
  ho.gc = gc;
  ho.heap_bytes = 256 << 10;
  auto heap = Heap::create(ho, prof->get());
  REQUIRE(heap.ok());
  walker.set_heap(heap->get());
  InterpOptions io;
  io.size = gcs;
  io.module_name = "prog";
  if (compiled) io.jit = jit::make_jit();
  auto interp = Interpreter::create(*module, **heap, prof->get(), io);
  REQUIRE(interp.ok());
  auto r = (*interp)->run("main");
  REQUIRE(r.ok());
  out.stats = (*prof)->stats();
  walker.set_heap(nullptr);
  return out;
}

// "(Big 0x7f...)" -> "(Big @)": addresses differ from run to run.
std::string shape(const std::string& path) { return std::regex_replace(path, std::regex("0x[0-9a-f]+"), "@"); }

}  // namespace

TEST_CASE("sim paths: through a static, a caller's stack frame and an array element, every collector", "[sim][paths]") {
  struct Program {
    const char* name;
    const char* body;
    RootKind kind;
    const char* path;
  };
  const Program programs[] = {
      {"static", kThroughStatic, RootKind::kStatic, "static 0 -> (Holder @).payload -> (Big @)"},
      {"frame", kThroughFrame, RootKind::kStackFrame, "thread prog-0 frame 1 (main) v3 -> (Big @)"},
      {"array", kThroughArray, RootKind::kStatic, "static 0 -> (Big[] @)[2] -> (Big @)"},
  };
  for (const Program& p : programs) {
    for (GcPolicy gc : kAllGcPolicies) {
      for (bool compiled : {false, true}) {
        INFO(p.name << " " << gc_policy_name(gc) << (compiled ? " jit" : " interp"));
        const Run r = run_program(std::string(kTypes) + kGcLoop + p.body, gc, compiled);
        REQUIRE(r.leaks.size() == 1);
        CHECK(r.leaks[0].type == "Big");
        CHECK(r.leaks[0].kind == p.kind);
        CHECK(shape(r.leaks[0].path) == p.path);
        CHECK(r.stats.path_searches == 1);
      }
    }
  }
}

TEST_CASE("sim paths: listleak's leak is held by its list, static 0 element 0", "[sim][paths]") {
  auto wl = load_workload("listleak");
  REQUIRE(wl.ok());
  for (GcPolicy gc : kAllGcPolicies) {
    INFO(gc_policy_name(gc));
    SimHeapWalker walker;
    std::vector<std::string> paths;
    ProfilerOptions po;
    po.default_leak_printer = false;
    po.heap_walker = &walker;
    po.on_leak = [&](const LeakReport& r) { paths.push_back(r.path ? format_path(*r.path) : ""); };
    auto prof = Profiler::create(std::move(po));
    REQUIRE(prof.ok());
    HeapOptions ho;
    ho.gc = gc;
    ho.heap_bytes = 1 << 20;
    auto heap = Heap::create(ho, prof->get());
    REQUIRE(heap.ok());
    walker.set_heap(heap->get());
    InterpOptions io;
    io.size = 600;
    auto interp = Interpreter::create(wl->module, **heap, prof->get(), io);
    REQUIRE(interp.ok());
    REQUIRE((*interp)->run("main").ok());
    REQUIRE(paths.size() == 1);
    CHECK(shape(paths[0]) == "static 0 -> (ListLeak[] @)[0] -> (ListLeak @)");
    walker.set_heap(nullptr);
  }
}

TEST_CASE("sim paths: the walker declines while other mutators run, and an unbound one always", "[sim][paths]") {
  SimHeapWalker unbound;
  CHECK_FALSE(unbound.begin_walk());
  auto heap = Heap::create(HeapOptions{}, nullptr);
  REQUIRE(heap.ok());
  SimHeapWalker walker;
  walker.set_heap(heap->get());
  Mutator a, b;
  (*heap)->attach_mutator(&a);
  CHECK(walker.begin_walk());  // one running mutator: the caller itself
  (*heap)->attach_mutator(&b);
  CHECK_FALSE(walker.begin_walk());  // another mutator may change the heap
  (*heap)->detach_mutator(&b);
  (*heap)->detach_mutator(&a);
}

}  // namespace objprof::sim
