// Path records (trace version 3): read back field by field, refused in version 1 and 2 traces,
// and every malformed one refused with a kCorrupt error that says what is wrong; the analyzer
// attaches a site's path to its leak entry.
#include "trace_builder.h"

#include <objprof/analysis/analyzer.h>
#include <objprof/analysis/leak_report.h>
#include <objprof/trace_reader.h>

#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <cstring>
#include <functional>

namespace test_trace_paths {

using namespace objprof;
using objprof::test::TraceBuilder;

namespace {

constexpr auto kStatic = static_cast<std::uint8_t>(RootKind::kStatic);
constexpr std::uint8_t kFound = 0, kUnreachable = 1;

// Two objects of site 10, type 1 at 0x10000 (held by the one at 0x10100) and 0x10100; the
// GC of epoch 0 holds whatever `records` writes inside its bracket.
std::vector<std::byte> trace_with(const std::function<void(TraceBuilder&)>& records) {
  TraceBuilder b;
  b.write_unpacked();  // fixed records, so that the tests can set the version back to 1
  b.type(1, "Node", 64);
  b.site(10, "Main.run", 3);
  b.thread(0, "main");
  b.alloc(0, 10, 1, 0x10000, 64);
  b.alloc(0, 10, 1, 0x10100, 64);
  b.gc_begin();
  records(b);
  b.gc_end();
  b.end();
  return b.take();
}

std::string load_error(const std::vector<std::byte>& data) {
  auto r = trace::load(data);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ErrorCode::kCorrupt);
  return r.error().message;
}

void good_path(TraceBuilder& b) { b.path_found(10, 1, kStatic, "static 0", {{0x10100, 1, ""}, {0x10000, 1, "next"}}); }

}  // namespace

TEST_CASE("path records: read back as written", "[trace][paths]") {
  auto c = trace::load(trace_with([](TraceBuilder& b) {
    good_path(b);
    b.path(10, 1, 0x10100, kUnreachable, kStatic, "", {}, 0, 77);
  }));
  REQUIRE(c.ok());
  REQUIRE(c->paths.size() == 2);
  const trace::PathEvent& p = c->paths[0];
  CHECK(p.epoch == 0);
  CHECK(p.site == 10);
  CHECK(p.type == 1);
  CHECK(p.target == 0x10000);
  CHECK(p.status == PathStatus::kFound);
  CHECK(p.objects_visited == 10);
  CHECK(p.path.root_kind == RootKind::kStatic);
  CHECK(p.path.root_name == "static 0");
  REQUIRE(p.path.steps.size() == 2);
  CHECK(p.path.steps[0].addr == 0x10100);
  CHECK(p.path.steps[1].via == "next");
  CHECK(p.path.steps[1].type_id == 1);
  CHECK(p.path.cut_steps == 0);
  CHECK(c->paths[1].status == PathStatus::kUnreachable);
  CHECK(c->paths[1].objects_visited == 77);
  // A cut record: the first of three steps.
  auto cut = trace::load(trace_with([](TraceBuilder& b) { b.path(10, 1, 0x10000, kFound, kStatic, "static 0", {{0x10100, 1, ""}}, 3); }));
  REQUIRE(cut.ok());
  CHECK(cut->paths[0].path.cut_steps == 2);
}

TEST_CASE("path records: refused in version 1 and 2 traces", "[trace][paths]") {
  std::vector<std::byte> bytes = trace_with(good_path);
  for (std::uint32_t v : {1u, 2u}) {
    std::memcpy(bytes.data() + 8, &v, 4);  // the preamble's version (not covered by chunk CRCs)
    CHECK(load_error(bytes).find(fmt::format("path record in a version {} trace", v)) != std::string::npos);
  }
}

TEST_CASE("path records: malformed ones are refused with what is wrong", "[trace][paths]") {
  struct Case {
    const char* what;
    std::function<void(TraceBuilder&)> write;
    const char* error;
  };
  const std::vector<Case> cases = {
      {"unknown status", [](TraceBuilder& b) { b.path(10, 1, 0x10000, 9, kStatic, "", {}, 0); }, "unknown status 9"},
      {"unknown root kind", [](TraceBuilder& b) { b.path(10, 1, 0x10000, kFound, 6, "r", {{0x10000, 1, ""}}, 1); }, "unknown root kind 6"},
      {"target outside the spaces", [](TraceBuilder& b) { b.path(10, 1, 0x30000, kUnreachable, kStatic, "", {}, 0); },
       "path target 0x30000 is outside every declared space"},
      {"step outside the spaces",
       [](TraceBuilder& b) { b.path(10, 1, 0x10000, kFound, kStatic, "r", {{0x5000, 1, ""}, {0x10000, 1, "x"}}, 2); },
       "path step address 0x5000 is outside every declared space"},
      {"more steps than the path has", [](TraceBuilder& b) { b.path(10, 1, 0x10000, kFound, kStatic, "r", {{0x10000, 1, ""}}, 0); },
       "holds 1 steps of a path of 0"},
      {"found with no step", [](TraceBuilder& b) { b.path(10, 1, 0x10000, kFound, kStatic, "r", {}, 0); }, "found with no step"},
      {"a failure with a root", [](TraceBuilder& b) { b.path(10, 1, 0x10000, kUnreachable, kStatic, "r", {}, 0); },
       "with status 'unreachable' has a root or steps"},
      {"a complete path that ends elsewhere",
       [](TraceBuilder& b) { b.path(10, 1, 0x10000, kFound, kStatic, "r", {{0x10100, 1, ""}}, 1); }, "ends at 0x10100"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    const std::string e = load_error(trace_with(c.write));
    CAPTURE(e);
    CHECK(e.find(c.error) != std::string::npos);
    CHECK(e.find("chunk ") == 0);  // names the chunk and its offset
  }
}

TEST_CASE("path records: only inside a GC, and for its epoch", "[trace][paths]") {
  TraceBuilder b;
  b.type(1, "Node", 64);
  b.alloc(0, 10, 1, 0x10000, 64);
  b.path_found(10, 1, kStatic, "r", {{0x10000, 1, ""}});
  b.end();
  CHECK(load_error(b.take()).find("path record for epoch 0 outside the GC of epoch 0") != std::string::npos);
}

TEST_CASE("path records: a step count the record cannot hold is refused before allocating", "[trace][paths]") {
  // The record claims 0xFFFF steps of at least 14 bytes each and holds none.
  const std::string e = load_error(trace_with([](TraceBuilder& b) {
    b.path(10, 1, 0x10000, kFound, kStatic, "r", {}, 0xFFFF, 10, 0xFFFF);
  }));
  CAPTURE(e);
  CHECK(e.find("path steps needs 917490 bytes") != std::string::npos);
}

TEST_CASE("path records: the leak report shows the site's path", "[analysis][paths]") {
  TraceBuilder b;
  b.type(1, "Node", 64);
  b.type(2, "Other", 64);
  b.site(10, "Main.run", 3);
  b.thread(0, "main");
  b.alloc(0, 10, 1, 0x10000, 64);
  for (int e = 0; e < 5; ++e) {
    b.gc_begin();
    if (e == 2) b.path(10, 2, 0x10000, kUnreachable, kStatic, "", {}, 0);  // another type: not preferred
    if (e == 3) b.path_found(10, 1, kStatic, "static 0", {{0x10000, 1, ""}});
    if (e == 4) b.path(10, 1, 0x10000, kUnreachable, kStatic, "", {}, 0);  // a later failure does not hide it
    b.gc_end();
  }
  b.end();
  auto a = analysis::analyze(b.take());
  REQUIRE(a.ok());
  CHECK(a->stats.path_records == 3);
  REQUIRE(a->paths.size() == 3);
  // GC_K alone: these epochs allocate nothing, so no thread's progress would age the node.
  const analysis::LeakReport l = analysis::leak_report(*a, analysis::LeakOptions{4, 0, 0});
  REQUIRE(l.sites.size() == 1);
  REQUIRE(l.sites[0].path != analysis::kNoIndex);
  CHECK(a->paths[l.sites[0].path].epoch == 3);
  CHECK(a->paths[l.sites[0].path].status == PathStatus::kFound);
}

}  // namespace test_trace_paths
