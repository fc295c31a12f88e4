// Differential tests of the JIT (backends/jit) against the interpreter: the same module, heap
// and profiler configuration run once interpreted and once compiled must give the same result
// (or the same error message), the same heap after every GC (object types, lengths and slot
// contents, references as offsets into the heap), the same trace (allocations, moves, frees,
// and the access bitmap of every epoch) and, with counting barriers, the same barrier counters.
// Programs: every workload at small sizes, and seeded random *executable* functions (loops,
// branches, switches, arithmetic, field and array accesses, calls, allocation, forced GCs,
// registers that hold references on some paths and scalars on others).
#include "sim/jit/jit.h"
#include "sim/heap.h"
#include "sim/interp.h"
#include "sim/workloads.h"

#include "../test_env.h"

#include <objprof/ir/text.h>
#include <objprof/objprof.h>
#include <objprof/trace_reader.h>

#include <catch2/catch.hpp>

#include <fmt/core.h>

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace objprof::sim::jit::test_jit {

using namespace objprof::backends;  // the barrier emitters (objprof_emit)
namespace {

struct Config {
  sim::GcPolicy gc = sim::GcPolicy::kSemiSpace;
  ir::PassKind pass = ir::PassKind::kGlobal;
  BarrierConfig barrier{true, MarkMode::kRacy, true};
  std::uint64_t size = 100;
  std::uint64_t heap = 256 << 10;
  std::vector<std::string> interpret;  // JIT mode: functions left to the interpreter
  CacheLocation cache = CacheLocation::kThreadField;  // JIT mode: where a barrier's cache lives
  std::shared_ptr<const CachePlan> plan;              // per-site cache use (both modes)
  bool profile = false;                               // interpreted mode: record a cache profile
};

struct Outcome {
  bool ok = false;
  std::int64_t value = 0;
  std::string error;
  std::vector<std::vector<std::uint64_t>> heaps;  // one snapshot per GC, plus the final heap
  trace::Contents trace;
  ProfilerStats prof;
  std::vector<std::string> leaks;
  std::uint32_t compiled = 0;
  std::optional<CacheProfile> profile;
};

// Objects in address order: offset, type, length word, then every slot (references as offsets).
std::vector<std::uint64_t> snapshot(const sim::Heap& h) {
  std::vector<std::uint64_t> out;
  h.for_each_object([&](Address a) {
    const sim::ObjHeader& hd = sim::Heap::header(a);
    if (hd.type == sim::kFreeCellType) return;
    out.push_back(a - h.base());
    out.push_back(hd.type);
    const std::uint64_t n = h.slot_count(a);
    out.push_back(n);
    for (std::uint64_t i = 0; i < n; ++i) {
      const std::uint64_t v = sim::Heap::load(a, i);
      out.push_back(h.slot_is_ref(a, i) && v != 0 ? v - h.base() : v);
    }
  });
  return out;
}

Outcome run(const ir::Module& module, const Config& c, bool jit) {
  ProfilerOptions po;
  po.default_leak_printer = false;
  po.on_leak = {};
  auto sink = std::make_unique<MemorySink>();
  MemorySink* trace_bytes = sink.get();
  po.trace_sink = std::move(sink);
  auto prof = Profiler::create(std::move(po));
  REQUIRE(prof.ok());
  sim::HeapOptions ho;
  ho.gc = c.gc;
  ho.heap_bytes = c.heap;
  auto heap = sim::Heap::create(ho, prof->get());
  REQUIRE(heap.ok());
  Outcome out;
  sim::Heap& h = **heap;
  h.on_gc = [&](const sim::GcInfo&) { out.heaps.push_back(snapshot(h)); };
  sim::InterpOptions io;
  io.pass = c.pass;
  io.barrier = c.barrier;
  io.size = c.size;
  io.cache_plan = c.plan;
  io.profile_cache = c.profile && !jit;
  std::shared_ptr<Jit> generator;
  if (jit) {
    JitOptions jo;
    jo.interpret = c.interpret;
    jo.cache = c.cache;
    generator = make_jit(jo);
    io.jit = generator;
  }
  auto interp = sim::Interpreter::create(module, h, prof->get(), io);
  REQUIRE(interp.ok());
  auto r = (*interp)->run("main");
  out.ok = r.ok();
  if (r.ok()) out.value = *r;
  else out.error = r.error().message;
  out.heaps.push_back(snapshot(h));
  REQUIRE((*prof)->finish().ok());
  auto contents = trace::load(trace_bytes->data());
  REQUIRE(contents.ok());
  out.trace = std::move(*contents);
  out.prof = (*prof)->stats();
  for (const LeakReport& l : (*prof)->possible_leaks())
    out.leaks.push_back(fmt::format("{} {} {} {}", l.method, l.bytecode_offset, l.type_name, l.size));
  if (generator) out.compiled = generator->stats().compiled;
  if (io.profile_cache) {
    auto p = (*interp)->cache_profile();
    REQUIRE(p.ok());
    out.profile = std::move(*p);
  }
  return out;
}

void require_same(const Outcome& a, const Outcome& b) {
  INFO("interpreter: " << (a.ok ? "ok" : a.error) << "; jit: " << (b.ok ? "ok" : b.error));
  REQUIRE(a.ok == b.ok);
  CHECK(a.value == b.value);
  CHECK(a.error == b.error);
  REQUIRE(a.heaps.size() == b.heaps.size());
  for (std::size_t i = 0; i < a.heaps.size(); ++i) {
    INFO("heap after GC " << i + 1 << " of " << a.heaps.size() << " (the last one: at the end)");
    CHECK(a.heaps[i] == b.heaps[i]);
  }
  const trace::Contents& x = a.trace;
  const trace::Contents& y = b.trace;
  REQUIRE(x.bitmaps.size() == y.bitmaps.size());
  for (std::size_t i = 0; i < x.bitmaps.size(); ++i) {
    INFO("access bitmap of epoch " << x.bitmaps[i].epoch);
    CHECK(x.bitmaps[i].epoch == y.bitmaps[i].epoch);
    CHECK(x.bitmaps[i].words == y.bitmaps[i].words);
  }
  REQUIRE(x.allocs.size() == y.allocs.size());
  for (std::size_t i = 0; i < x.allocs.size(); ++i) {
    CHECK(x.allocs[i].site == y.allocs[i].site);
    CHECK(x.allocs[i].type == y.allocs[i].type);
    CHECK(x.allocs[i].size == y.allocs[i].size);
    CHECK(x.allocs[i].epoch == y.allocs[i].epoch);
    CHECK(x.allocs[i].addr - x.header.spaces.at(0).begin == y.allocs[i].addr - y.header.spaces.at(0).begin);
  }
  CHECK(x.moves.size() == y.moves.size());
  CHECK(x.frees.size() == y.frees.size());
  CHECK(x.gc_ends.size() == y.gc_ends.size());
  CHECK(a.prof.barriers_executed == b.prof.barriers_executed);
  CHECK(a.prof.barrier_cache_hits == b.prof.barrier_cache_hits);
  CHECK(a.prof.bitmap_marks == b.prof.bitmap_marks);
  CHECK(a.prof.bits_harvested == b.prof.bits_harvested);
  CHECK(a.leaks == b.leaks);
}

struct Variant {
  BarrierConfig barrier;
  CacheLocation cache = CacheLocation::kThreadField;
};
const Variant kVariants[] = {
    {{true, MarkMode::kRacy, true}},
    {{true, MarkMode::kAtomic, true}},
    {{false, MarkMode::kRacy, true}},
    {{false, MarkMode::kAtomic, false}},
    {{true, MarkMode::kAtomicTestFirst, false}},
    {{true, MarkMode::kRacy, true}, CacheLocation::kPinnedRegister},
    {{true, MarkMode::kAtomic, false}, CacheLocation::kPinnedRegister},
};
const ir::PassKind kPasses[] = {ir::PassKind::kNone, ir::PassKind::kPaper, ir::PassKind::kGlobal};

// Whether this build runs a differential test's case of `program` (a workload, or a generated
// program's seed), kPasses[pass], kVariants[variant] and kAllGcPolicies[gc]. Every build but
// ASan's runs them all. Under ASan each (program, pass, variant) runs with one collector, a
// different one as any of the three moves on: the compiled code is asmjit's, which ASan does
// not instrument, so what it checks (the interpreter, the runtime's calls from compiled code,
// the heaps, the collectors and the profiler) does the same work whatever barrier variant the
// code was compiled with. Every pair of the four still meets in some case. With every
// combination the two tests took 123 s of the ASan preset's 450 s of tests; 38 s so.
bool in_this_build(std::size_t program, std::size_t pass, std::size_t variant, std::size_t gc) {
  if (!test::address_sanitizer()) return true;
  return (program + pass + variant) % std::size(sim::kAllGcPolicies) == gc;
}

// The interpreter does not read where compiled code keeps the cache (Variant::cache), so a
// variant that differs from an earlier one only there compares its JIT run with the earlier
// variant's interpreter run: the index of that variant, or `i` itself. (The comparison of two
// runs never depends on their heaps' addresses: each run maps a heap of its own.)
std::size_t interpreter_run_of(std::size_t i) {
  const BarrierConfig& b = kVariants[i].barrier;
  for (std::size_t j = 0; j < i; ++j) {
    const BarrierConfig& o = kVariants[j].barrier;
    if (o.cache == b.cache && o.mark == b.mark && o.count == b.count) return j;
  }
  return i;
}

// One pass's interpreter runs, per (variant, collector): a run that a later variant shares
// (interpreter_run_of) is kept until then, the others only until the next one. A later variant
// whose earlier one did not run with this collector (in_this_build) runs its own.
class InterpreterRuns {
 public:
  template <class Run>
  const Outcome& get(std::size_t variant, std::size_t gc, Run&& run) {
    const std::size_t owner = interpreter_run_of(variant);
    std::optional<Outcome>& slot = shared(owner) ? runs_[owner][gc] : last_;
    if (owner == variant || !slot.has_value()) slot.emplace(run());
    return *slot;
  }

 private:
  static bool shared(std::size_t variant) {
    for (std::size_t later = variant + 1; later < std::size(kVariants); ++later)
      if (interpreter_run_of(later) == variant) return true;
    return false;
  }
  std::optional<Outcome> runs_[std::size(kVariants)][std::size(sim::kAllGcPolicies)];
  std::optional<Outcome> last_;
};

// --- A generator of executable functions -----------------------------------------------------
//
// main's registers: v3..v8 scalars, v9..v12 Nodes (never null), v13 an int[16], v14 a Node[8],
// v15 "mixed" (a reference on some paths, a scalar on others: a dynamic kind for the JIT), v16
// and v17 temporaries, v18 = 1, v19 = 7, v20/v21 loop counters, v22 = null, v23 an array read
// from a field (element kind unknown statically), v24 an element of it.
class ProgramGen {
 public:
  explicit ProgramGen(std::uint64_t seed) : rng_(seed) {}

  std::string module() {
    std::string s = R"(type Node { next: ref, val: int, arr: ref }

func Node.touch(v0, v1) regs 4 {
entry:
  v2 = getfield v0, Node.val
  v2 = add v2, v1
  putfield v0, Node.val, v2
  v3 = getfield v0, Node.next
  ret v2
}

func mk(v0) regs 3 {
entry:
  v1 = new Node
  putfield v1, Node.val, v0
  ret v1
}

func main(v0, v1, v2) regs 26 {
entry:
  v18 = const 1
  v19 = const 7
  v22 = null
  v25 = const 16
  v13 = newarray int, v25
  v25 = const 8
  v14 = newarray Node, v25
)";
    for (int r = 3; r <= 8; ++r) s += fmt::format("  v{} = const {}\n", r, pick(-50, 50));
    for (int r = 9; r <= 12; ++r) s += fmt::format("  v{} = new Node\n  putfield v{}, Node.val, v{}\n", r, r, r - 6);
    s += "  putfield v9, Node.arr, v13\n  putfield v10, Node.arr, v14\n  putfield v11, Node.arr, v13\n";
    s += "  v15 = const 0\n";
    body_ = &s;
    stmts(0, pick(6, 14));
    s += "  v3 = add v3, v4\n  v3 = add v3, v5\n  v3 = xor v3, v6\n  ret v3\n}\n";
    return s;
  }

 private:
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  int sreg() { return pick(3, 8); }
  int rreg() { return pick(9, 12); }
  std::string label() { return fmt::format("L{}", next_label_++); }
  void emit(const std::string& line) { *body_ += "  " + line + "\n"; }
  void bind(const std::string& l) { *body_ += l + ":\n"; }

  void stmts(int depth, int n) {
    for (int i = 0; i < n; ++i) stmt(depth);
  }

  void stmt(int depth) {
    static const char* kOps[] = {"add", "sub", "mul", "and", "or", "xor", "shl", "shr"};
    static const char* kCmps[] = {"lt", "le", "gt", "ge", "eq", "ne"};
    switch (pick(0, depth < 2 ? 17 : 14)) {
      case 0:
        emit(fmt::format("v{} = {} v{}, v{}", sreg(), kOps[pick(0, 7)], sreg(), sreg()));
        break;
      case 1:
        emit(fmt::format("v16 = or v{}, v18", sreg()));
        emit(fmt::format("v{} = {} v{}, v16", sreg(), pick(0, 1) ? "div" : "rem", sreg()));
        break;
      case 2:
        emit(fmt::format("v{} = cmp.{} v{}, v{}", sreg(), kCmps[pick(0, 5)], sreg(), sreg()));
        break;
      case 3:
        emit(fmt::format("putfield v{}, Node.val, v{}", rreg(), sreg()));
        emit(fmt::format("v{} = getfield v{}, Node.val", sreg(), rreg()));
        break;
      case 4: {
        const int a = rreg(), b = rreg();
        emit(fmt::format("putfield v{}, Node.next, v{}", a, rreg()));
        const std::string isnull = label(), ok = label(), end = label();
        emit(fmt::format("v16 = getfield v{}, Node.next", a));
        emit("v17 = refeq v16, v22");
        emit(fmt::format("br v17, {}, {}", isnull, ok));
        bind(isnull);
        emit(fmt::format("goto {}", end));
        bind(ok);
        emit(fmt::format("v{} = move v16", b));
        emit(fmt::format("goto {}", end));
        bind(end);
        break;
      }
      case 5:
        emit(fmt::format("v16 = and v{}, v19", sreg()));
        emit(fmt::format("aput v13, v16, v{}", sreg()));
        emit(fmt::format("v{} = aget v13, v16", sreg()));
        emit(fmt::format("v{} = alen v13", sreg()));
        break;
      case 6:
        emit(fmt::format("v16 = and v{}, v19", sreg()));
        emit(fmt::format("aput v14, v16, v{}", rreg()));
        emit(fmt::format("v{} = aget v14, v16", rreg()));
        break;
      case 7: {
        const int r = rreg();
        emit(fmt::format("v{} = new Node", r));
        emit(fmt::format("putfield v{}, Node.val, v{}", r, sreg()));
        emit(fmt::format("putfield v{}, Node.arr, v{}", r, pick(13, 14)));
        break;
      }
      case 8: {
        // An array of statically unknown element kind: the JIT reads the tag from its type.
        const std::string use = label(), end = label();
        emit(fmt::format("v23 = getfield v{}, Node.arr", rreg()));
        emit("v17 = refeq v23, v22");
        emit(fmt::format("br v17, {}, {}", end, use));
        bind(use);
        emit(fmt::format("v16 = and v{}, v19", sreg()));
        emit("v24 = aget v23, v16");
        emit("aput v23, v16, v24");
        emit(fmt::format("v17 = refeq v24, v{}", rreg()));
        emit(fmt::format("v{} = add v{}, v17", sreg(), sreg()));
        emit(fmt::format("v{} = alen v23", sreg()));
        emit(fmt::format("goto {}", end));
        bind(end);
        break;
      }
      case 9: {
        // v15 holds a reference on one path and a scalar on the other.
        const std::string a = label(), b = label(), end = label();
        emit(fmt::format("v17 = and v{}, v18", sreg()));
        emit(fmt::format("br v17, {}, {}", a, b));
        bind(a);
        emit(fmt::format("v15 = move v{}", rreg()));
        emit(fmt::format("goto {}", end));
        bind(b);
        emit(fmt::format("v15 = move v{}", sreg()));
        emit(fmt::format("goto {}", end));
        bind(end);
        emit(fmt::format("v17 = refeq v15, v{}", rreg()));
        emit(fmt::format("v{} = add v{}, v17", sreg(), sreg()));
        emit(fmt::format("v16 = const {}", pick(0, 3)));
        emit("call.nogc sys.static_set(v16, v15)");
        if (pick(0, 1)) emit("call sys.gc()");
        emit("v15 = call.nogc sys.static_get(v16)");
        break;
      }
      case 10: emit("safepoint"); break;
      case 11: emit("call sys.gc()"); break;
      case 12:
        emit(fmt::format("v{} = invoke Node.touch(v{}, v{})", sreg(), rreg(), sreg()));
        emit(fmt::format("v{} = call mk(v{})", rreg(), sreg()));
        break;
      case 13: {
        const int r = rreg();
        emit(fmt::format("monitorenter v{}", r));
        emit(fmt::format("v{} = getfield v{}, Node.val", sreg(), r));
        emit(fmt::format("monitorexit v{}", r));
        break;
      }
      case 14: {
        const std::string t = label(), e = label(), end = label();
        emit(fmt::format("v17 = cmp.{} v{}, v{}", kCmps[pick(0, 5)], sreg(), sreg()));
        emit(fmt::format("br v17, {}, {}", t, e));
        bind(t);
        stmts(depth + 1, pick(1, 3));
        emit(fmt::format("goto {}", end));
        bind(e);
        stmts(depth + 1, pick(0, 2));
        emit(fmt::format("goto {}", end));
        bind(end);
        break;
      }
      case 15:
      case 16: {
        const int i = 20 + depth;
        const std::string head = label(), body = label(), exit = label();
        emit(fmt::format("v{} = const 0", i));
        emit(fmt::format("goto {}", head));
        bind(head);
        emit(fmt::format("v16 = const {}", pick(1, 12)));
        emit(fmt::format("v17 = cmp.lt v{}, v16", i));
        emit(fmt::format("br v17, {}, {}", body, exit));
        bind(body);
        stmts(depth + 1, pick(2, 5));
        emit(fmt::format("v{} = add v{}, v18", i, i));
        emit(fmt::format("goto {}", head));
        bind(exit);
        break;
      }
      case 17: {
        const std::string l0 = label(), l1 = label(), l2 = label(), end = label();
        emit(fmt::format("v16 = and v{}, v19", sreg()));
        emit(fmt::format("switch v16, {}, {}, {}", l0, l1, l2));
        for (const std::string& l : {l0, l1, l2}) {
          bind(l);
          stmts(depth + 1, pick(0, 2));
          emit(fmt::format("goto {}", end));
        }
        bind(end);
        break;
      }
    }
  }

  std::mt19937_64 rng_;
  std::string* body_ = nullptr;
  int next_label_ = 0;
};

ir::Module parse(const std::string& text) {
  auto m = ir::parse_module(text, "test");
  if (!m.ok()) FAIL(m.error().message << "\n" << text);
  return std::move(*m);
}

}  // namespace

TEST_CASE("jit: generated executable functions match the interpreter in every pass and barrier variant", "[jit][single-threaded]") {
  if (!jit_supported()) return;  // see "unsupported arch" below: nothing is compiled here
  const int programs = static_cast<int>(test::scaled(40, 8));
  std::size_t gcs = 0;
  for (int seed = 1; seed <= programs; ++seed) {
    const std::string text = ProgramGen(static_cast<std::uint64_t>(seed)).module();
    const ir::Module m = parse(text);
    for (std::size_t pi = 0; pi < std::size(kPasses); ++pi) {
      const ir::PassKind pass = kPasses[pi];
      InterpreterRuns interp_runs;
      for (std::size_t vi = 0; vi < std::size(kVariants); ++vi) {
        const Variant& v = kVariants[vi];
        const BarrierConfig& b = v.barrier;
        for (std::size_t gi = 0; gi < std::size(sim::kAllGcPolicies); ++gi) {
          if (!in_this_build(static_cast<std::size_t>(seed), pi, vi, gi)) continue;
          const sim::GcPolicy gc = sim::kAllGcPolicies[gi];
          Config c;
          c.pass = pass;
          c.barrier = b;
          c.cache = v.cache;
          c.gc = gc;
          c.heap = 64 << 10;
          INFO("seed " << seed << " pass " << ir::pass_name(pass) << " cache " << b.cache << cache_location_name(v.cache) << " mark "
                       << static_cast<int>(b.mark) << " gc " << sim::gc_policy_name(gc) << "\n" << text);
          const Outcome& interp = interp_runs.get(vi, gi, [&] { return run(m, c, false); });
          const Outcome jit = run(m, c, true);
          CHECK(jit.compiled == 3);
          CHECK(interp.ok);  // the generator writes programs that run to the end
          if (interpreter_run_of(vi) == vi) gcs += interp.heaps.size() - 1;
          require_same(interp, jit);
        }
      }
    }
  }
  CHECK(gcs >= static_cast<std::size_t>(programs) * 10);  // forced and allocation-triggered GCs
}

TEST_CASE("jit: every workload matches the interpreter (heap, bitmap per epoch, counters, leaks)", "[jit][single-threaded]") {
  if (!jit_supported()) return;
  struct W {
    const char* name;
    std::uint64_t size;
    std::uint64_t heap;  // semispace; mark-sweep fills its larger space later, so it gets less
    std::uint64_t ms_heap;
  };
  const W ws[] = {{"listleak", 150, 256 << 10, 256 << 10}, {"swapleak", 300, 256 << 10, 256 << 10},
                  {"points", 60, 128 << 10, 128 << 10},    {"scimark", 32, 128 << 10, 64 << 10},
                  {"graph", 60, 64 << 10, 64 << 10},       {"threads", 200, 64 << 10, 64 << 10},
                  {"requests", 60, 128 << 10, 128 << 10}};  // the mark-sweep heaps compact: objects move
  for (std::size_t wi = 0; wi < std::size(ws); ++wi) {
    const W& w = ws[wi];
    // Under TSan only the workload with several mutators: the others are single-threaded, and
    // every other build compares them all (tests/test_env.h).
    if (objprof::test::thread_sanitizer() && std::string_view(w.name) != "threads") continue;
    auto wl = sim::load_workload(w.name);
    REQUIRE(wl.ok());
    for (std::size_t pi = 0; pi < std::size(kPasses); ++pi) {
      const ir::PassKind pass = kPasses[pi];
      InterpreterRuns interp_runs;
      for (std::size_t vi = 0; vi < std::size(kVariants); ++vi) {
        const Variant& v = kVariants[vi];
        const BarrierConfig& b = v.barrier;
        for (std::size_t gi = 0; gi < std::size(sim::kAllGcPolicies); ++gi) {
          if (!in_this_build(wi, pi, vi, gi)) continue;
          const sim::GcPolicy gc = sim::kAllGcPolicies[gi];
          Config c;
          c.pass = pass;
          c.barrier = b;
          c.cache = v.cache;
          c.gc = gc;
          c.size = w.size;
          c.heap = gc == sim::GcPolicy::kSemiSpace ? w.heap : w.ms_heap;
          INFO(w.name << " pass " << ir::pass_name(pass) << " cache " << b.cache << cache_location_name(v.cache) << " mark "
                      << static_cast<int>(b.mark) << " gc " << sim::gc_policy_name(gc));
          const Outcome& interp = interp_runs.get(vi, gi, [&] { return run(wl->module, c, false); });
          const Outcome jit = run(wl->module, c, true);
          if (!interp.ok) FAIL(interp.error);
          CHECK(interp.heaps.size() >= 2);  // at least one GC happened
          if (jit_supported()) CHECK(jit.compiled == wl->module.functions.size());
          require_same(interp, jit);
        }
      }
    }
  }
}

TEST_CASE("jit: compiled code follows a per-site cache plan exactly as the interpreter does", "[jit][cache][single-threaded]") {
  // A plan made from a profile of a smaller input (as a tier-0 run would give), then the same
  // heap, bitmaps and, with counting barriers, the same cache hits in both modes: a site the
  // plan leaves without a compare never hits, one without a store never feeds a hit.
  if (!jit_supported()) return;
  struct W {
    const char* name;
    std::uint64_t size, heap;
  };
  const W ws[] = {{"listleak", 150, 256 << 10}, {"swapleak", 300, 256 << 10}, {"points", 60, 128 << 10},
                  {"scimark", 32, 128 << 10},   {"graph", 60, 64 << 10},     {"threads", 200, 64 << 10}};
  std::uint32_t uses[3] = {0, 0, 0};
  for (const W& w : ws) {
    auto wl = sim::load_workload(w.name);
    REQUIRE(wl.ok());
    for (CacheLocation where : {CacheLocation::kThreadField, CacheLocation::kPinnedRegister}) {
      Config c;
      c.size = w.size / 2;
      c.heap = w.heap;
      c.profile = true;
      const Outcome training = run(wl->module, c, false);
      REQUIRE(training.profile);
      auto plan = std::make_shared<CachePlan>(
          plan_cache(*training.profile, CacheCosts::host(where == CacheLocation::kPinnedRegister)));
      for (CacheUse u : {CacheUse::kCompare, CacheUse::kStore, CacheUse::kNone}) uses[static_cast<int>(u)] += plan->count(u);
      c.profile = false;
      c.size = w.size;
      c.plan = plan;
      c.cache = where;
      INFO(w.name << " " << cache_location_name(where) << ": " << plan->count(CacheUse::kCompare) << " compare, "
                  << plan->count(CacheUse::kStore) << " store, " << plan->count(CacheUse::kNone) << " none");
      const Outcome interp = run(wl->module, c, false);
      const Outcome jit = run(wl->module, c, true);
      if (!interp.ok) FAIL(interp.error);
      require_same(interp, jit);
    }
  }
  // Every use occurs somewhere, so each lowering path ran.
  CHECK(uses[0] > 0);
  CHECK(uses[1] > 0);
  CHECK(uses[2] > 0);
}

TEST_CASE("jit: listleak gives the interpreter's leak report", "[jit]") {
  if (!jit_supported()) return;
  auto wl = sim::load_workload("listleak");
  REQUIRE(wl.ok());
  Config c;
  c.size = test::scaled(600, 2);
  c.heap = 1 << 20;
  const Outcome interp = run(wl->module, c, false);
  const Outcome jit = run(wl->module, c, true);
  REQUIRE(interp.leaks.size() == 1);
  CHECK(jit.leaks == interp.leaks);
  require_same(interp, jit);
}

TEST_CASE("jit: mixed mode runs the functions it is told to leave to the interpreter", "[jit]") {
  if (!jit_supported()) return;
  for (int seed = 1; seed <= 6; ++seed) {
    const ir::Module m = parse(ProgramGen(static_cast<std::uint64_t>(seed + 100)).module());
    for (const std::vector<std::string>& skip :
         {std::vector<std::string>{"main"}, std::vector<std::string>{"Node.touch", "mk"}}) {
      Config c;
      c.interpret = skip;
      c.heap = 64 << 10;
      const Outcome interp = run(m, c, false);
      const Outcome jit = run(m, c, true);
      CHECK(jit.compiled == 3 - skip.size());
      require_same(interp, jit);
    }
  }
}

TEST_CASE("jit: failed checks give the interpreter's error messages", "[jit]") {
  if (!jit_supported()) return;
  const std::string types = "type Node { next: ref, val: int, arr: ref }\ntype Other { x: int }\n";
  const char* bodies[] = {
      "v3 = null\n  v4 = getfield v3, Node.val\n  ret v4",                                   // null
      "v3 = const 5\n  v4 = getfield v3, Node.val\n  ret v4",                                // scalar as object
      "v3 = new Other\n  v4 = getfield v3, Node.val\n  ret v4",                              // wrong type
      "v3 = new Node\n  v4 = alen v3\n  ret v4",                                             // not an array
      "v5 = const 4\n  v3 = newarray int, v5\n  v4 = aget v3, v5\n  ret v4",                 // bounds
      "v5 = const -1\n  v3 = newarray int, v5\n  ret",                                       // negative length
      "v3 = new Node\n  v4 = const 3\n  putfield v3, Node.next, v4\n  ret",                  // scalar in ref field
      "v3 = new Node\n  putfield v3, Node.val, v3\n  ret",                                   // ref in scalar field
      "v3 = new Node\n  v4 = add v3, v0\n  ret v4",                                          // arithmetic on a ref
      "v3 = const 0\n  v4 = div v0, v3\n  ret v4",                                           // division by zero
      "v5 = const 2\n  v3 = newarray Node, v5\n  v4 = const 1\n  aput v3, v4, v4\n  ret",    // scalar in ref array
      "v3 = call.nogc sys.rand(v1)\n  ret v3",                                               // builtin error
      "v3 = null\n  monitorenter v3\n  ret",                                                 // monitor on null
  };
  for (const char* body : bodies) {
    const ir::Module m = parse(types + "func main(v0, v1, v2) regs 6 {\nentry:\n  " + body + "\n}\n");
    Config c;
    const Outcome interp = run(m, c, false);
    const Outcome jit = run(m, c, true);
    INFO(body);
    CHECK_FALSE(interp.ok);
    CHECK_FALSE(interp.error.empty());
    require_same(interp, jit);
  }
}

TEST_CASE("jit: a .nogc call that collects is an error in compiled code, not a stale reference", "[jit]") {
  if (!jit_supported()) return;
  const ir::Module m = parse(R"(type Node { next: ref }
func alloc_some(v0) regs 2 {
entry:
  v1 = new Node
  call sys.gc()
  ret v1
}
func main(v0, v1, v2) regs 6 {
entry:
  v3 = new Node
  v4 = call.nogc alloc_some(v0)
  putfield v3, Node.next, v4
  ret
}
)");
  const Outcome jit = run(m, Config{}, true);
  REQUIRE_FALSE(jit.ok);
  CHECK(jit.error.find(".nogc") != std::string::npos);
}

TEST_CASE("jit: functions it does not compile run interpreted and say why (mixed mode)", "[jit]") {
  const ir::Module m = parse(ProgramGen(7).module());
  ProfilerOptions po;
  po.default_leak_printer = false;
  auto prof = Profiler::create(std::move(po));
  REQUIRE(prof.ok());
  auto heap = sim::Heap::create(sim::HeapOptions{}, prof->get());
  REQUIRE(heap.ok());
  JitOptions jo;
  jo.interpret = {"mk"};
  auto generator = make_jit(jo);
  sim::InterpOptions io;
  io.jit = generator;
  auto interp = sim::Interpreter::create(m, **heap, prof->get(), io);
  REQUIRE(interp.ok());
  for (const auto& mode : (*interp)->function_modes()) {
    INFO(mode.name);
    if (!jit_supported()) {
      CHECK_FALSE(mode.compiled);
      CHECK(mode.reason == (mode.name == "mk" ? "excluded by JitOptions::interpret" : "unsupported on this arch"));
    } else {
      CHECK(mode.compiled == (mode.name != "mk"));
      CHECK(mode.reason.empty() == mode.compiled);
    }
  }
  CHECK((*interp)->run("main").ok());
}

}  // namespace objprof::sim::jit
