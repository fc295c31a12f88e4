// The JVM class importer on classes compiled in the test from small Java sources with javac
// (skipped, with a message, when no JDK is installed), and on corrupt class files.
#include <catch2/catch.hpp>

#include "ir_test_util.h"
#include "objprof/ir/analysis.h"
#include "objprof/ir/checker.h"
#include "objprof/ir/elim.h"
#include "objprof/ir/class_archive.h"
#include "objprof/ir/jvm_import.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace objprof::ir::jvm_import_test {
namespace {

const char* const kJavaSource = R"(
import java.util.*;
public class Probe {
  static class Node { Node next; int value; }
  int total;
  int sum(Node n) { int s = 0; while (n != null) { s += n.value; n = n.next; } return s; }
  synchronized void add(int x) { total += x; total += x; }
  int arrays(int[] a, Object[] o) { int s = a.length; for (int i = 0; i < a.length; i++) s += a[i]; if (o[0] == o[1]) s++; return s + o.length; }
  String guarded(List<String> l) { try { return l.get(0).trim(); } catch (RuntimeException e) { return e.getMessage(); } finally { total++; } }
  long wide(long a, double b) { long[] x = new long[3]; x[1] = a; return x[1] + (long) b; }
  int sw(int k) { switch (k) { case 1: return 3; case 7: return 4; case 100: return 5; default: return 0; } }
  Object lock(Object o) { synchronized (o) { return o.toString(); } }
  int dups(int[] a, long[] b, int i) { a[i] += 2; b[i] += 3; return a[i]++; }
}
)";

std::string compile_probe() {
  namespace fs = std::filesystem;
  if (std::system("javac -version > /dev/null 2>&1") != 0) return {};
  static int counter = 0;
  fs::path dir = fs::temp_directory_path() /
                 fmt::format("objprof_ir_javac_{}_{}_{}", static_cast<long>(getpid()), ++counter,
                             static_cast<long long>(std::chrono::steady_clock::now().time_since_epoch().count()));
  fs::create_directories(dir);
  std::ofstream(dir / "Probe.java") << kJavaSource;
  std::string cmd = fmt::format("cd '{}' && javac -d . Probe.java > javac.log 2>&1", dir.string());
  if (std::system(cmd.c_str()) != 0) return {};
  return (dir / "Probe.class").string();
}

TEST_CASE("JVM import: javac-compiled methods import, verify, round-trip and pass the checker", "[ir]") {
  std::string path = compile_probe();
  if (path.empty()) {
    FAIL("no working javac on PATH: scripts/setup.sh installs default-jdk-headless");
  }
  auto imported = import_class(test::read_file(path));
  REQUIRE(imported.ok());
  CHECK(imported->skipped.empty());
  const Module& m = imported->module;
  REQUIRE(m.functions.size() >= 9);  // <init> and the eight methods
  std::string printed = print_module(m);
  auto back = parse_module(printed, "Probe");
  REQUIRE(back.ok());
  CHECK(*back == m);
  std::size_t paper_removed = 0, global_removed = 0;
  for (const Function& f : m.functions) {
    INFO(print_function(f));
    REQUIRE(verify_function(f, &m).ok());
    FunctionAnalyses am(f);
    REQUIRE(verify_ssa(f, am.cfg(), am.domtree(), am.ssa()).ok());
    ElimOptions o;
    o.pass = PassKind::kPaper;
    auto paper = run_elim(f, o, &m);
    o.pass = PassKind::kGlobal;
    auto global = run_elim(f, o, &m);
    REQUIRE((paper.ok() && global.ok()));
    for (std::size_t k = 0; k < paper->accesses.size(); ++k) CHECK((paper->accesses[k].kept || !global->accesses[k].kept));
    for (const ElimResult* r : {&*paper, &*global}) {
      CheckReport report = check_function(f, *r, check_options_for(*r, static_cast<std::uint32_t>(test::scaled(200)), 3));
      if (!report.ok()) FAIL(format_violation(f, *report.violation));
    }
    paper_removed += paper->num_removed();
    global_removed += global->num_removed();
    if (f.name == "Probe.add") CHECK(paper->num_removed() == 3);  // total += x; total += x
  }
  CHECK(global_removed > paper_removed);
  std::error_code ec;
  std::filesystem::remove_all(std::filesystem::path(path).parent_path(), ec);
}

TEST_CASE("JVM import: corrupt class files give errors, never crashes", "[ir]") {
  CHECK(import_class("").error().code == ErrorCode::kCorrupt);
  CHECK(import_class("not a class file at all").error().message == "class file: bad magic (not a .class file)");
  std::string path = compile_probe();
  if (path.empty()) {
    FAIL("no working javac on PATH: scripts/setup.sh installs default-jdk-headless");
  }
  std::string bytes = test::read_file(path);
  for (std::size_t n = 0; n < bytes.size(); n += 7) {
    auto r = import_class(std::string_view(bytes).substr(0, n));
    if (r) {
      for (const Function& f : r->module.functions) (void)verify_function(f, &r->module);
    }
  }
  for (std::size_t i = 10; i < bytes.size(); i += 13) {
    std::string bad = bytes;
    bad[i] = static_cast<char>(bad[i] ^ 0x5a);
    auto r = import_class(bad);
    if (!r) continue;
    for (const Function& f : r->module.functions) {
      if (!verify_function(f, &r->module).ok()) continue;
      auto e = run_elim(f, ElimOptions{}, &r->module);
      if (e) CHECK(check_function(f, *e, check_options_for(*e, 5, 1)).ok());
    }
  }
  std::error_code ec;
  std::filesystem::remove_all(std::filesystem::path(path).parent_path(), ec);
}

// A class file "T" with one static method `method`()V whose Code attribute holds `code`, built
// byte by byte so the test needs no JDK.
std::string class_with_code(const std::string& code, const std::string& method = "m") {
  std::string b;
  auto u1 = [&](unsigned v) { b.push_back(static_cast<char>(v & 0xff)); };
  auto u2 = [&](unsigned v) { u1(v >> 8); u1(v); };
  auto u4 = [&](std::uint32_t v) { u2(v >> 16); u2(v & 0xffff); };
  auto utf8 = [&](const std::string& s) { u1(1); u2(static_cast<unsigned>(s.size())); b += s; };
  u4(0xCAFEBABE);
  u2(0);
  u2(52);
  u2(6);  // constant pool: 1 "T", 2 Class #1, 3 "m", 4 "()V", 5 "Code"
  utf8("T");
  u1(7);
  u2(1);
  utf8(method);
  utf8("()V");
  utf8("Code");
  u2(0x0021);  // public super
  u2(2);       // this_class
  u2(0);       // no super class
  u2(0);       // interfaces
  u2(0);       // fields
  u2(1);       // methods
  u2(0x0009);  // public static
  u2(3);
  u2(4);
  u2(1);  // one attribute: Code
  u2(5);
  u4(static_cast<std::uint32_t>(2 + 2 + 4 + code.size() + 2 + 2));
  u2(4);  // max_stack
  u2(1);  // max_locals
  u4(static_cast<std::uint32_t>(code.size()));
  b += code;
  u2(0);  // exception table
  u2(0);  // attributes
  u2(0);  // class attributes
  return b;
}

TEST_CASE("JVM import: bytecode ending inside a switch's alignment pad is skipped, not a hang", "[ir][regression]") {
  // nop; tableswitch at offset 1 whose 2 pad bytes (to offset 4) run past the end of the code.
  // The importer used to loop forever skipping the pad once its reader had failed
  // (tests/fuzz/corpus/jvm_import/regression-switch-pad-past-end.class is the same input).
  for (const std::string& code : {std::string("\x00\xaa", 2), std::string("\x00\xab", 2), std::string("\x00\x00\xaa", 3)}) {
    auto r = import_class(class_with_code(code));
    REQUIRE(r.ok());
    REQUIRE(r->skipped.size() == 1);
    CHECK(r->skipped[0] == "T.m()V: truncated bytecode");
  }
  // A whole tableswitch after the same pad still imports: iconst_0 at 0, tableswitch at 1, pad
  // to 4, then default, low, high and one case, all jumping to the return at 20 (1 + 19).
  std::string whole("\x03\xaa\x00\x00", 4);
  for (std::int32_t v : {19, 0, 0, 19})
    for (int k = 3; k >= 0; --k) whole.push_back(static_cast<char>((v >> (8 * k)) & 0xff));
  whole.push_back(static_cast<char>(0xb1));
  auto r = import_class(class_with_code(whole));
  REQUIRE(r.ok());
  CHECK(r->skipped.empty());
  CHECK(r->module.functions.size() == 1);
}

}  // namespace

namespace {

// Packs the compiled probe into a .jar and a .jmod with the JDK's own tools: pairs of
// (archive, the Probe.class it holds); an empty archive path when a tool failed. A .jmod holds
// a named module, and a module cannot contain the unnamed package, so it gets its own
// compilation of the same source in package `probe`.
std::vector<std::pair<std::string, std::string>> pack_probe(const std::string& class_file) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(class_file).parent_path();
  std::vector<std::pair<std::string, std::string>> out;
  std::string jar;
  if (std::system(fmt::format("cd '{}' && jar cf probe.jar *.class > jar.log 2>&1", dir.string()).c_str()) == 0)
    jar = (dir / "probe.jar").string();
  out.emplace_back(jar, class_file);
  fs::create_directories(dir / "mod" / "probe");
  std::ofstream(dir / "mod" / "module-info.java") << "module probe { exports probe; }\n";
  std::ofstream(dir / "mod" / "probe" / "Probe.java") << "package probe;\n" << kJavaSource;
  std::string jmod;
  if (std::system(fmt::format("cd '{}' && javac -d cls mod/module-info.java mod/probe/Probe.java > jmod.log 2>&1 && "
                              "jmod create --class-path cls probe.jmod >> jmod.log 2>&1",
                              dir.string())
                      .c_str()) == 0)
    jmod = (dir / "probe.jmod").string();
  out.emplace_back(jmod, (dir / "cls" / "probe" / "Probe.class").string());
  return out;
}

}  // namespace

TEST_CASE("JVM import: .jar and .jmod archives yield the same class files", "[ir]") {
  const std::string path = compile_probe();
  if (path.empty()) {
    FAIL("no working javac on PATH: scripts/setup.sh installs default-jdk-headless");
  }
  for (const auto& [archive, class_path] : pack_probe(path)) {
    if (archive.empty()) {
      FAIL("the JDK's jar or jmod tool failed (see jar.log / jmod.log in " << path << "'s directory)");
    }
    CAPTURE(archive);
    const std::string original = test::read_file(class_path);
    auto entries = read_class_archive(archive);
    REQUIRE(entries.ok());
    bool found = false;
    for (const auto& e : *entries) {
      CHECK(e.name.size() > 6);
      if (e.name.ends_with("Probe.class")) {
        found = true;
        CHECK(e.bytes == original);
        CHECK(import_class(e.bytes).ok());
      }
    }
    CHECK(found);
    CHECK(entries->size() >= 2);  // Probe and Probe$Node
    // A truncated archive is an error that names it, not a crash.
    const std::string cut = archive + ".cut";
    {
      const std::string bytes = test::read_file(archive);
      std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
    }
    auto broken = read_class_archive(cut);
    REQUIRE_FALSE(broken.ok());
    CHECK(broken.error().message.find(cut) != std::string::npos);
  }
  auto missing = read_class_archive("/nonexistent/x.jar");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().code == ErrorCode::kIo);
  std::error_code ec;
  std::filesystem::remove_all(std::filesystem::path(path).parent_path(), ec);
}

}  // namespace objprof::ir

namespace objprof::ir::jvm_import_test {
namespace {

TEST_CASE("JVM import: a local index past max_locals skips the method instead of emitting a bad register", "[ir][regression]") {
  // iload 255; pop; return, with max_locals 1. The importer used to emit v255 in a function of
  // 8 registers, which printed but did not parse back (found by fuzz_jvm_import; the corpus
  // input is regression-local-index-past-max-locals.class).
  auto r = import_class(class_with_code(std::string("\x15\xff\x57\xb1", 4)));
  REQUIRE(r.ok());
  REQUIRE(r->skipped.size() == 1);
  CHECK(r->skipped[0].find("register out of range") != std::string::npos);
}

TEST_CASE("JVM import: names with bytes the IR cannot spell are escaped, so the module round-trips", "[ir][regression]") {
  // Found by fuzz_jvm_import (regression-control-byte-in-name-roundtrip.class): a control byte,
  // or any non-ASCII name, was printed raw and the IR parser refused it.
  for (const std::string& name : {std::string("m\x1e"), std::string("caf\xc3\xa9"), std::string("9lives"), std::string("a.b")}) {
    auto r = import_class(class_with_code(std::string("\xb1", 1), name));
    REQUIRE(r.ok());
    REQUIRE(r->module.functions.size() == 1);
    const std::string printed = print_module(r->module);
    auto back = parse_module(printed, "T");
    REQUIRE(back.ok());
    CHECK(*back == r->module);
  }
  CHECK(import_class(class_with_code(std::string("\xb1", 1), "m\x1e"))->module.functions[0].name == "T.m$1e");
  CHECK(import_class(class_with_code(std::string("\xb1", 1), "<init>"))->module.functions[0].name == "T.<init>");
}

}  // namespace
}  // namespace objprof::ir
