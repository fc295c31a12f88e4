// JitOptions::code_ranges, the hook the instruction-count ladders (tools/jit_insn_ladder) bin
// executed PCs with: every compiled function gets its range; every barrier the lowering emits
// (x86_64 and arm64) gets one too, inside its function, and there is exactly one per operand the
// elimination pass kept (counted here from the decoded code the generator was given, not from
// the JIT), none with barriers off. The compiled code still runs and gives the interpreter's
// result.
#include "sim/jit/jit.h"
#include "sim/heap.h"
#include "sim/interp.h"
#include "sim/workloads.h"
#include "sim_test_support.h"

#include <objprof/objprof.h>

#include <catch2/catch.hpp>

#include <bit>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace objprof::sim::jit::test_jit_code_ranges {

using namespace objprof::backends;  // the barrier emitters (objprof_emit)
namespace {

// Forwards to the JIT and counts, per (function, pc), the operands the pass kept in what it
// was asked to compile.
class KeptCounter final : public sim::CodeGenerator {
 public:
  explicit KeptCounter(std::shared_ptr<Jit> jit) : jit_(std::move(jit)) {}
  std::vector<sim::CompiledFunction> compile(const sim::CompileRequest& request) override {
    std::vector<sim::CompiledFunction> out = jit_->compile(request);
    for (std::size_t f = 0; f < request.functions.size(); ++f) {
      if (!out[f].entry) continue;
      const auto& code = *request.functions[f].code;
      for (std::uint32_t pc = 0; pc < code.size(); ++pc)
        if (code[pc].kept) kept[{request.functions[f].ir->name, pc}] += std::popcount(code[pc].kept);
    }
    return out;
  }
  std::map<std::pair<std::string, std::uint32_t>, int> kept;

 private:
  std::shared_ptr<Jit> jit_;
};

struct Ranges {
  std::vector<CodeRange> ranges;
  std::map<std::pair<std::string, std::uint32_t>, int> kept;
  std::int64_t result = 0;
};

Ranges compile_and_run(const char* workload, ir::PassKind pass, bool cache, bool barriers) {
  auto wl = sim::load_workload(workload);
  REQUIRE(wl.ok());
  test::SimRig rig(256 << 10);
  Ranges out;
  JitOptions jo;
  jo.barriers = barriers;
  jo.code_ranges = &out.ranges;
  auto counter = std::make_shared<KeptCounter>(make_jit(jo));
  sim::InterpOptions io;
  io.pass = pass;
  io.barrier = BarrierConfig{cache, MarkMode::kRacy, false};
  io.size = 50;
  io.jit = counter;
  auto interp = sim::Interpreter::create(wl->module, *rig.heap, rig.prof.get(), io);
  REQUIRE(interp.ok());
  auto r = (*interp)->run("main");
  REQUIRE(r.ok());
  out.result = *r;
  out.kept = counter->kept;
  return out;
}

int sites(const Ranges& r) {
  int n = 0;
  for (const auto& [site, count] : r.kept) n += count;
  return n;
}

TEST_CASE("jit: code ranges cover each compiled function and, on arm64, each kept barrier site", "[jit][single-threaded]") {
  if (!jit_supported()) return;
  int sites_none = 0, sites_global = 0;
  for (const char* w : {"listleak", "graph", "scimark"}) {
    for (ir::PassKind pass : {ir::PassKind::kNone, ir::PassKind::kGlobal}) {
      for (bool cache : {false, true}) {
        INFO(w << " pass " << ir::pass_name(pass) << " cache " << cache);
        const Ranges r = compile_and_run(w, pass, cache, true);
        std::map<std::string, CodeRange> functions;
        for (const CodeRange& c : r.ranges)
          if (c.kind == CodeRange::Kind::kFunction) {
            CHECK(c.begin < c.end);
            CHECK(functions.emplace(c.function, c).second);  // one range per function
          }
        REQUIRE_FALSE(functions.empty());
        std::map<std::pair<std::string, std::uint32_t>, int> barriers;
        for (const CodeRange& c : r.ranges) {
          if (c.kind != CodeRange::Kind::kBarrier) continue;
          INFO(c.function << " pc " << c.pc);
          REQUIRE(functions.count(c.function) == 1);
          const CodeRange& f = functions.at(c.function);
          CHECK(f.begin <= c.begin);
          CHECK(c.begin < c.end);  // a barrier is at least a compare and a branch
          CHECK(c.end <= f.end);
          CHECK(r.kept.count({c.function, c.pc}) == 1);  // only where the pass kept one
          ++barriers[{c.function, c.pc}];
        }
        CHECK(barriers == r.kept);  // every kept operand, once
        REQUIRE_FALSE(barriers.empty());
      }
    }
    // The elimination pass removes sites; with barriers off none is emitted at all.
    const Ranges none = compile_and_run(w, ir::PassKind::kNone, false, true);
    const Ranges global = compile_and_run(w, ir::PassKind::kGlobal, false, true);
    CHECK(sites(global) <= sites(none));
    sites_none += sites(none);
    sites_global += sites(global);
    const Ranges off = compile_and_run(w, ir::PassKind::kNone, false, false);
    for (const CodeRange& c : off.ranges) CHECK(c.kind == CodeRange::Kind::kFunction);
    CHECK(off.result == none.result);
    CHECK(global.result == none.result);
  }
  CHECK(sites_global < sites_none);
}

}  // namespace
}  // namespace objprof::sim::jit
