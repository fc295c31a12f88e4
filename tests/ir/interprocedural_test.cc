// What a VM guarantees beyond its GC points, and calls that cannot reach one:
//  - the assumptions (allocation marks, the receiver marked on entry) in the global pass and
//    in the checker, which holds the VM to them;
//  - the checker running real callees, so a wrong "this call cannot GC" summary is caught;
//  - JvmProgram's class-hierarchy resolution and may-GC summaries on javac-compiled classes.
#include <catch2/catch.hpp>

#include "ir_test_util.h"
#include "objprof/ir/checker.h"
#include "objprof/ir/class_archive.h"
#include "objprof/ir/elim.h"
#include "objprof/ir/generate.h"
#include "objprof/ir/jvm_import.h"
#include "objprof/ir/jvm_program.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

namespace objprof::ir::interprocedural_test {
namespace {

const char* const kAssumptions = R"(
type Node { next: ref, value: int }
func Node.get(this v0, v1) regs 4 {
entry:
  v2 = getfield v0, Node.value #1
  v3 = new Node
  putfield v3, Node.next, v0 #2
  safepoint
  v2 = getfield v0, Node.value #3
  ret v2
}
)";

ElimResult run_global(const Function& f, bool allocation_marks, bool receiver_marked) {
  ElimOptions o;
  o.allocation_marks = allocation_marks;
  o.receiver_marked = receiver_marked;
  o.self_check = true;
  auto r = run_elim(f, o);
  REQUIRE(r.ok());
  return std::move(r).value();
}

TEST_CASE("assumptions: an allocation and the receiver on entry count as accesses, and the checker holds the VM to them",
          "[ir][interproc]") {
  Module m = test::parse_or_die(kAssumptions, "assumptions.ir");
  const Function& f = m.functions[0];
  REQUIRE(f.has_receiver);

  ElimResult none = run_global(f, false, false);
  CHECK(none.num_removed() == 0);

  ElimResult both = run_global(f, true, true);
  REQUIRE(both.accesses.size() == 3);
  CHECK_FALSE(both.accesses[0].kept);
  CHECK(both.accesses[0].reason == Reason::kReceiver);
  CHECK_FALSE(both.accesses[1].kept);
  CHECK(both.accesses[1].reason == Reason::kAllocated);
  CHECK(both.accesses[2].kept);  // a safepoint ran since the receiver was marked
  CHECK(both.allocation_marks);
  CHECK(both.receiver_marked);

  // Only what was assumed is removed.
  ElimResult alloc_only = run_global(f, true, false);
  CHECK(alloc_only.accesses[0].kept);
  CHECK_FALSE(alloc_only.accesses[1].kept);

  // A VM that keeps its promises: no violation.
  CheckOptions keeps = check_options_for(both, 200, 7);
  CHECK(keeps.allocation_marks);
  CHECK(keeps.receiver_marked);
  CHECK(check_function(f, both, keeps).ok());

  // A VM whose allocator does not mark: the access to the new object is unmarked.
  CheckOptions no_alloc_marks = keeps;
  no_alloc_marks.allocation_marks = false;
  CheckReport r1 = check_function(f, both, no_alloc_marks);
  REQUIRE_FALSE(r1.ok());
  CHECK(r1.violation->site == 2);

  // A VM that enters the method without a barrier on the receiver (reflection without one,
  // or a poll at method entry): the first access to `this` is unmarked.
  CheckOptions no_receiver = keeps;
  no_receiver.receiver_marked = false;
  CheckReport r2 = check_function(f, both, no_receiver);
  REQUIRE_FALSE(r2.ok());
  CHECK(r2.violation->site == 1);
}

TEST_CASE("assumptions: `this` in the text form marks the receiver and round-trips", "[ir][interproc]") {
  Module m = test::parse_or_die(kAssumptions, "assumptions.ir");
  const std::string printed = print_module(m);
  CHECK(printed.find("func Node.get(this v0, v1)") != std::string::npos);
  auto back = parse_module(printed, "printed.ir");
  REQUIRE(back.ok());
  CHECK(*back == m);

  auto bare = parse_module("func f(this) regs 1 {\nentry:\n  ret\n}\n", "bare.ir");
  REQUIRE_FALSE(bare.ok());
  CHECK(bare.error().message.find("a receiver register after 'this'") != std::string::npos);

  Function no_params = m.functions[0];
  no_params.params.clear();
  auto r = run_elim(no_params, {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("has a receiver but no parameters") != std::string::npos);
}

TEST_CASE("assumptions: on generated functions the pass stays sound and removes at least as much", "[ir][interproc][property]") {
  GenOptions g;
  std::size_t more = 0, functions = 0;
  for (CfgShape shape : {CfgShape::kStructured, CfgShape::kUnstructured, CfgShape::kMixed}) {
    g.shape = shape;
    for (std::uint32_t blocks : {4u, 16u, 48u}) {
      g.blocks = blocks;
      Module m = generate_module(blocks * 31 + static_cast<std::uint64_t>(shape), static_cast<std::uint32_t>(test::scaled(60)), g);
      for (std::size_t i = 0; i < m.functions.size(); ++i) {
        Function f = m.functions[i];
        f.has_receiver = i % 2 == 0 && !f.params.empty();
        ElimResult plain = run_global(f, false, false);
        ElimResult assumed = run_global(f, true, true);
        REQUIRE(plain.accesses.size() == assumed.accesses.size());
        for (std::size_t a = 0; a < plain.accesses.size(); ++a) {
          // Facts only grow: every barrier the plain pass removes stays removed.
          if (!plain.accesses[a].kept) REQUIRE_FALSE(assumed.accesses[a].kept);
        }
        more += assumed.num_removed() - plain.num_removed();
        ++functions;
        CheckReport report = check_function(f, assumed, check_options_for(assumed, 60, 1000 + i));
        if (!report.ok()) FAIL(format_violation(f, *report.violation) << "\n" << print_function(f));
      }
    }
  }
  CHECK(functions > 0);
  CHECK(more > 0);  // the corpus allocates and has receivers: the assumptions must pay somewhere
}

// Resolves `call NAME(...)` to the module's function NAME (tests: a call graph by name).
class ModuleResolver final : public CallResolver {
 public:
  explicit ModuleResolver(const Module& m) {
    for (const Function& f : m.functions) by_name_[f.name] = &f;
  }
  bool callees(const Instr& call, std::vector<const Function*>* out) const override {
    auto it = by_name_.find(call.name);
    if (it == by_name_.end()) return false;
    out->push_back(it->second);
    return true;
  }

 private:
  std::map<std::string, const Function*> by_name_;
};

// `caller` believes both calls cannot GC. `make` allocates, two calls down; `pure` does not.
std::string call_module(bool make_says_nogc) {
  return fmt::format(R"(
type Node {{ next: ref, value: int }}
func allocate() regs 1 {{
entry:
  v0 = new Node
  ret v0
}}
func make() regs 1 {{
entry:
  v0 = call.nogc allocate()
  ret v0
}}
func pure(v0) regs 2 {{
entry:
  v1 = const 1
  ret v1
}}
func caller(v0) regs 2 {{
entry:
  v1 = getfield v0, Node.value #1
  call{} make()
  v1 = getfield v0, Node.value #2
  call.nogc pure(v0)
  v1 = getfield v0, Node.value #3
  ret v1
}}
)",
                     make_says_nogc ? ".nogc" : "");
}

TEST_CASE("checker: a call summarized as no-GC whose callee allocates is caught when the checker runs the callee",
          "[ir][interproc]") {
  Module wrong = test::parse_or_die(call_module(true), "wrong.ir");
  const Function& caller = wrong.functions[3];
  ElimResult r = run_global(caller, false, false);
  REQUIRE(r.accesses.size() == 3);
  CHECK_FALSE(r.accesses[1].kept);  // trusts the wrong summary
  CHECK_FALSE(r.accesses[2].kept);

  // Trusting the `.nogc` flags, the checker cannot see the mistake.
  CHECK(check_function(caller, r, check_options_for(r, 200, 3)).ok());
  // Running the callees (make -> allocate, whose `new` may GC), it can.
  ModuleResolver resolver(wrong);
  CheckOptions o = check_options_for(r, 200, 3);
  o.calls = &resolver;
  CheckReport report = check_function(caller, r, o);
  REQUIRE_FALSE(report.ok());
  CHECK(report.violation->site == 2);
  CHECK(format_violation(caller, *report.violation).find("[gc]") != std::string::npos);

  // With the true summary for `make`, the access after it keeps its barrier and the one after
  // `pure` (which really cannot GC) is still removed: no violation.
  Module right = test::parse_or_die(call_module(false), "right.ir");
  const Function& caller2 = right.functions[3];
  ElimResult r2 = run_global(caller2, false, false);
  CHECK(r2.accesses[1].kept);
  CHECK_FALSE(r2.accesses[2].kept);
  ModuleResolver resolver2(right);
  CheckOptions o2 = check_options_for(r2, 200, 3);
  o2.calls = &resolver2;
  CHECK(check_function(caller2, r2, o2).ok());
}

const char* const kReturns = R"(
type Node { next: ref, value: int }
func fresh() regs 1 {
entry:
  v0 = new Node
  ret v0
}
func loaded(v0) regs 2 {
entry:
  v1 = getfield v0, Node.next #1
  ret v1
}
func caller() regs 3 {
entry:
  v1 = call.marked fresh()
  v2 = getfield v1, Node.value #1
  ret v2
}
)";

TEST_CASE("return summaries: a call marked `.marked` returns an available object, and a false claim fails at the return",
          "[ir][interproc]") {
  Module m = test::parse_or_die(kReturns, "returns.ir");
  REQUIRE(print_module(m).find("call.marked fresh()") != std::string::npos);
  auto back = parse_module(print_module(m), "printed.ir");
  REQUIRE(back.ok());
  CHECK(*back == m);

  ElimResult fresh = run_global(m.functions[0], true, false);
  CHECK(fresh.returns_marked);  // the allocator marked what it returns
  CHECK_FALSE(run_global(m.functions[0], false, false).returns_marked);
  ElimResult loaded = run_global(m.functions[1], true, false);
  CHECK_FALSE(loaded.returns_marked);  // a loaded reference was never accessed

  ElimResult caller = run_global(m.functions[2], true, false);
  REQUIRE(caller.accesses.size() == 1);
  CHECK_FALSE(caller.accesses[0].kept);
  CHECK(caller.accesses[0].reason == Reason::kReturnedMarked);
  CHECK(check_function(m.functions[2], caller, check_options_for(caller, 100, 9)).ok());

  // The checker holds each function to its claim: fresh keeps it, loaded does not.
  CheckOptions o = check_options_for(fresh, 100, 9);
  CHECK(o.verify_returns);
  CHECK(check_function(m.functions[0], fresh, o).ok());
  ElimResult lie = loaded;
  lie.returns_marked = true;
  CheckReport report = check_function(m.functions[1], lie, check_options_for(lie, 100, 9));
  REQUIRE_FALSE(report.ok());
  CHECK(report.violation->site == kNoSite);
  CHECK(format_violation(m.functions[1], *report.violation).rfind("return (block entry, v1)", 0) == 0);
}

// ---- JvmProgram on javac-compiled classes -------------------------------------------------

const char* const kHierarchy = R"(
public class Calls {
  static class A { int v; int leaf() { return v; } }
  static class B extends A { int leaf() { return new int[v].length; } }
  static final class F { int w; int leaf() { return w; } int twice() { return leaf() + leaf(); } }
  static class C { int w; int rec(int n) { return n == 0 ? w : rec(n - 1); } private int secret() { return w; } int viaSecret() { return secret(); } }
  interface I { int f(); }
  static class I1 implements I { public int f() { return 1; } }
  static class I2 implements I { public int f() { return new Object().hashCode(); } }
  static class J1 implements I { public int f() { return 3; } }
  static int viaA(A a) { int x = a.v; x += a.leaf(); return x + a.v; }
  static int viaB(B b) { int x = b.v; x += b.leaf(); return x + b.v; }
  static int viaF(F f) { int x = f.w; x += f.twice(); return x + f.w; }
  static int viaRec(C c) { int x = c.w; x += c.rec(3); return x + c.w; }
  static int viaSecret(C c) { int x = c.w; x += c.viaSecret(); return x + c.w; }
  static int viaI(I i, C c) { int x = c.w; x += i.f(); return x + c.w; }
  static int viaI1(I1 i, C c) { int x = c.w; x += i.f(); return x + c.w; }
  static int outside(C c) { int x = c.w; x += (int) System.nanoTime(); return x + c.w; }
  static int loops(C c, int n) { int s = 0; for (int i = 0; i < n; i++) s += c.w; return s; }
  static class O { int p; int f(int x) { return p + x; } Object f(String s) { return new Object(); } }
  static int viaO(O o) { int x = o.p; x += o.f(1); return x + o.p; }
  static class M { int z; static M make() { return new M(); } }
  static int viaMake() { return M.make().z; }
}
)";

// Compiles kHierarchy; returns the directory with the class files, or "" without a JDK.
std::filesystem::path compile_hierarchy() {
  namespace fs = std::filesystem;
  if (std::system("javac -version > /dev/null 2>&1") != 0) return {};
  fs::path dir = fs::temp_directory_path() /
                 fmt::format("objprof_interproc_{}_{}", static_cast<long>(getpid()),
                             static_cast<long long>(std::chrono::steady_clock::now().time_since_epoch().count()));
  fs::create_directories(dir);
  std::ofstream(dir / "Calls.java") << kHierarchy;
  std::string cmd = fmt::format("cd '{}' && javac -d . Calls.java > javac.log 2>&1", dir.string());
  if (std::system(cmd.c_str()) != 0) return {};
  return dir;
}

// java/lang/Object from the JDK the test compiled with: every class's superclass chain ends
// there, and resolution refuses a chain that leaves the program.
std::string object_class() {
  namespace fs = std::filesystem;
  for (const char* home : {"/usr/lib/jvm/default-java", "/usr/lib/jvm/java-17-openjdk-amd64"}) {
    fs::path jmod = fs::path(home) / "jmods" / "java.base.jmod";
    if (!fs::exists(jmod)) continue;
    auto entries = read_class_archive(jmod.string());
    if (!entries.ok()) continue;
    for (const ArchiveEntry& e : *entries) {
      if (e.name == "classes/java/lang/Object.class") return e.bytes;
    }
  }
  return {};
}

const Function* find_function(const JvmProgram& p, const std::string& name) {
  for (const ClassImport& c : p.classes()) {
    for (const Function& f : c.module.functions) {
      if (f.name == name) return &f;
    }
  }
  return nullptr;
}

// The one call in `f` whose name starts with `prefix`.
const Instr* find_call(const Function& f, const std::string& prefix) {
  for (const Block& b : f.blocks) {
    for (const Instr& in : b.instrs) {
      if ((in.op == Opcode::kInvoke || in.op == Opcode::kCallStatic) && in.name.rfind(prefix, 0) == 0) return &in;
    }
  }
  return nullptr;
}

TEST_CASE("JvmProgram: class-hierarchy summaries mark exactly the calls that cannot reach a GC point", "[ir][interproc]") {
  namespace fs = std::filesystem;
  fs::path dir = compile_hierarchy();
  if (dir.empty()) FAIL("no working javac on PATH: scripts/setup.sh installs default-jdk-headless");
  const std::string object = object_class();
  if (object.empty()) FAIL("no java.base.jmod with java/lang/Object.class: scripts/setup.sh installs default-jdk-headless");
  std::vector<ClassImport> classes;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".class") continue;
    auto imported = import_class(test::read_file(entry.path().string()));
    REQUIRE(imported.ok());
    classes.push_back(std::move(imported).value());
  }
  auto obj = import_class(object);
  REQUIRE(obj.ok());
  CHECK(obj->info.super.empty());
  classes.push_back(std::move(obj).value());
  for (const ClassImport& c : classes) {
    if (c.info.name == "Calls$B") CHECK(c.info.super == "Calls$A");
    if (c.info.name == "Calls$I1") CHECK(c.info.interfaces == std::vector<std::string>{"Calls$I"});
    REQUIRE(c.call_descriptors.size() == c.module.functions.size());
    if (c.info.name == "Calls") {
      bool found = false;
      for (std::size_t j = 0; j < c.module.functions.size(); ++j) {
        for (const CallDescriptor& d : c.call_descriptors[j]) {
          const Instr& in = c.module.functions[j].blocks[d.block].instrs[d.instr];
          CHECK(in.type.empty());  // the descriptor lives beside the IR, not in it
          if (in.name == "Calls$O.f") found = d.descriptor == "(I)I";
        }
      }
      CHECK(found);
    }
  }
  fs::remove_all(dir);

  JvmProgram program(std::move(classes));
  GcSummaryStats stats = program.apply_gc_summaries();
  CHECK(stats.calls_no_gc > 0);
  CHECK(stats.calls_no_gc <= stats.calls_resolved);
  CHECK(stats.calls_resolved < stats.calls);  // System.nanoTime is outside the program

  auto fn = [&](const std::string& name) {
    const Function* f = find_function(program, name);
    REQUIRE(f != nullptr);
    return f;
  };
  // Summaries of the callees.
  CHECK_FALSE(program.may_gc(*fn("Calls$A.leaf")));
  CHECK(program.may_gc(*fn("Calls$B.leaf")));      // allocates
  CHECK_FALSE(program.may_gc(*fn("Calls$F.twice")));  // calls only a no-GC method
  CHECK_FALSE(program.may_gc(*fn("Calls$C.rec")));    // recursion without a GC point
  CHECK(program.may_gc(*fn("Calls$I2.f")));

  // Calls: each caller is `x = o.field; x += call(); return x + o.field`.
  struct Case {
    const char* caller;
    const char* call;
    bool nogc;
  };
  const Case cases[] = {
      {"Calls.viaA", "Calls$A.leaf", false},        // B overrides leaf and allocates (CHA)
      {"Calls.viaB", "Calls$B.leaf", false},
      {"Calls.viaF", "Calls$F.twice", true},        // final class, no GC below
      {"Calls.viaRec", "Calls$C.rec", true},
      {"Calls.viaSecret", "Calls$C.viaSecret", true},  // reaches a private method exactly
      {"Calls.viaI", "Calls$I.f", false},           // I2.f allocates
      {"Calls.viaI1", "Calls$I1.f", true},          // I1 has no subclass: only I1.f
      {"Calls.outside", "java/lang/System.nanoTime", false},  // not in the program
      {"Calls.viaO", "Calls$O.f", true},            // f(I)I, not the allocating f(String)
  };
  ElimOptions eo;
  eo.self_check = true;
  for (const Case& c : cases) {
    INFO(c.caller);
    const Function* caller = fn(c.caller);
    const Instr* call = find_call(*caller, c.call);
    REQUIRE(call != nullptr);
    CHECK(call->may_gc == !c.nogc);
    auto r = run_elim(*caller, eo);
    REQUIRE(r.ok());
    // The second access to the field survives the call exactly when the call cannot GC.
    REQUIRE(r->accesses.size() >= 2);
    CHECK(r->accesses.back().kept == !c.nogc);
    // The checker runs the real callees and agrees.
    CheckOptions co = check_options_for(*r, 100, 5);
    co.calls = &program;
    CheckReport report = check_function(*caller, *r, co);
    if (!report.ok()) FAIL(format_violation(*caller, *report.violation));
  }
  // Return summaries: M.make returns the object it allocated (its constructor cannot GC), so
  // the field access on its result needs no barrier; the checker verifies make's returns.
  ElimOptions marks = eo;
  marks.allocation_marks = true;
  marks.receiver_marked = true;
  CHECK(program.apply_return_summaries(marks) > 0);
  const Instr* make_call = find_call(*fn("Calls.viaMake"), "Calls$M.make");
  REQUIRE(make_call != nullptr);
  CHECK(make_call->result_marked);
  auto via_make = run_elim(*fn("Calls.viaMake"), marks);
  REQUIRE(via_make.ok());
  REQUIRE(via_make->accesses.size() == 1);
  CHECK(via_make->accesses[0].reason == Reason::kReturnedMarked);
  auto make = run_elim(*fn("Calls$M.make"), marks);
  REQUIRE(make.ok());
  CHECK(make->returns_marked);
  CheckOptions make_check = check_options_for(*make, 100, 5);
  make_check.calls = &program;
  CHECK(check_function(*fn("Calls$M.make"), *make, make_check).ok());
  CHECK_FALSE(find_call(*fn("Calls.viaA"), "Calls$A.leaf")->result_marked);  // returns an int

  // A loop without GC points keeps one barrier for the loop-invariant object.
  auto loops = run_elim(*fn("Calls.loops"), eo);
  REQUIRE(loops.ok());
  CHECK(loops->num_kept() == 1);

  // A deliberately wrong summary: call viaA's A.leaf (which may run B.leaf) no-GC. The pass
  // now removes the barrier after it, and the checker, running B.leaf's allocation, catches it.
  Function wrong = *fn("Calls.viaA");
  for (Block& b : wrong.blocks) {
    for (Instr& in : b.instrs) {
      if (in.name == "Calls$A.leaf") in.may_gc = false;
    }
  }
  auto r = run_elim(wrong, eo);
  REQUIRE(r.ok());
  CHECK_FALSE(r->accesses.back().kept);
  CheckOptions co = check_options_for(*r, 200, 5);
  co.calls = &program;
  CheckReport report = check_function(wrong, *r, co);
  REQUIRE_FALSE(report.ok());
  CHECK(report.violation->site == r->accesses.back().site);

  // Root marks: the object whose field is read again is in a live register across the call, so
  // whatever the callee does, its second access needs no barrier. The checker runs the real
  // callees (B.leaf allocates, so some runs collect) and marks the caller's live registers.
  ElimOptions roots = eo;
  roots.roots_marked = true;
  std::uint64_t gcs = 0;
  for (const Case& c : cases) {
    INFO(c.caller << " with root marks");
    const Function* caller = fn(c.caller);
    auto rr = run_elim(*caller, roots);
    REQUIRE(rr.ok());
    CHECK_FALSE(rr->accesses.back().kept);
    CheckOptions rco = check_options_for(*rr, 200, 9);
    rco.calls = &program;
    CheckReport rreport = check_function(*caller, *rr, rco);
    if (!rreport.ok()) FAIL(format_violation(*caller, *rreport.violation));
    gcs += rreport.gcs;
    // A VM that does not mark its roots breaks the decisions wherever the callee may collect.
    rco.roots_marked = false;
    CHECK(check_function(*caller, *rr, rco).ok() == c.nogc);
  }
  CHECK(gcs > 0);
}

}  // namespace
}  // namespace objprof::ir
