// Compiled code parks at `safepoint` by polling the heap's stop flag inline. Thread 1 announces
// itself (static 1), then spins in a compiled loop whose only GC point is `safepoint` (its
// static read is `.nogc`, which never parks) until thread 0, which waited for the announcement,
// has collected and published a value (static 0). If the poll never saw the flag,
// thread 0's collection would wait for thread 1 forever; if it parked without spilling, the
// box thread 1 holds across the loop would be stale after the copying collection (its read
// fails the type check, or sys.check fails on the value).
#include "sim/jit/jit.h"
#include "sim/heap.h"
#include "sim/interp.h"

#include <objprof/ir/text.h>
#include <objprof/objprof.h>

#include <catch2/catch.hpp>

#include <memory>
#include <string>

namespace objprof::sim::jit::test_jit_safepoint {

using namespace objprof::backends;  // the barrier emitters (objprof_emit)
namespace {

constexpr const char* kProgram = R"(type Box { value: int }
func main(v0, v1, v2) regs 10 {
entry:
  v3 = const 0
  v4 = const 1
  v8 = new Box
  v9 = const 41
  putfield v8, Box.value, v9
  br v1, announce, wait
wait:
  v6 = call.nogc sys.static_get(v4)
  br v6, collect, wait
collect:
  call sys.gc()
  call.nogc sys.static_set(v3, v4)
  v5 = getfield v8, Box.value
  ret v5
announce:
  call.nogc sys.static_set(v4, v4)
  goto spin
spin:
  v6 = call.nogc sys.static_get(v3)
  br v6, out, poll
poll:
  safepoint
  goto spin
out:
  v5 = getfield v8, Box.value
  v5 = add v5, v6
  v7 = const 42
  v7 = cmp.eq v5, v7
  call.nogc sys.check(v7)
  ret v5
}
)";

struct SpinRun {
  std::int64_t result = 0;
  std::uint64_t gcs = 0;
  bool main_compiled = false;
};

SpinRun run_spin(bool with_jit, sim::GcPolicy gc) {
  auto parsed = ir::parse_module(kProgram);
  REQUIRE(parsed.ok());
  ProfilerOptions po;
  po.default_leak_printer = false;
  auto prof = Profiler::create(std::move(po));
  REQUIRE(prof.ok());
  sim::HeapOptions ho;
  ho.gc = gc;
  ho.heap_bytes = 64 << 10;
  auto heap = sim::Heap::create(ho, prof->get());
  REQUIRE(heap.ok());
  sim::InterpOptions io;
  io.threads = 2;
  if (with_jit) io.jit = make_jit(JitOptions{});
  auto interp = sim::Interpreter::create(*parsed, **heap, prof->get(), io);
  REQUIRE(interp.ok());
  SpinRun out;
  for (const auto& mode : (*interp)->function_modes())
    if (mode.name == "main") out.main_compiled = mode.compiled;
  auto r = (*interp)->run("main");
  if (!r.ok()) FAIL(r.error().message);
  out.result = *r;
  out.gcs = (*heap)->stats().gcs;
  return out;
}

TEST_CASE("jit: a compiled loop parks at safepoint while another thread collects", "[jit]") {
  for (sim::GcPolicy gc : sim::kAllGcPolicies) {
    INFO(sim::gc_policy_name(gc));
    const SpinRun interp = run_spin(false, gc);
    CHECK(interp.result == 41);  // thread 0's value; thread 1 checks its own (42) with sys.check
    CHECK(interp.gcs == 1);
    const SpinRun jit = run_spin(true, gc);
    if (jit_supported()) CHECK(jit.main_compiled);
    CHECK(jit.result == 41);
    CHECK(jit.gcs == 1);
  }
}

}  // namespace
}  // namespace objprof::sim::jit
