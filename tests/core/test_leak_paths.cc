// The profiler's paths from roots (ProfilerOptions::heap_walker): the walker is not called at
// all while nothing is stale; the GC that finds a pair's first stale objects walks once for all
// new pairs, gives every report of the pair the path to its lowest-addressed sample, writes a
// path record, and never walks for that pair again; failed searches are retried a bounded
// number of times, declined walks cost no attempt; a path longer than a chunk is cut.
#include "graph_walker.h"
#include "test_support.h"

#include <objprof/barrier.h>
#include <objprof/profiler.h>
#include <objprof/trace_reader.h>

#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <string>
#include <vector>

namespace test_leak_paths {

using namespace objprof;
using objprof::test::ProfilerRig;
using objprof::test::GraphWalker;

namespace {

constexpr std::uint32_t kHolder = 1, kBigArray = 2, kBig = 3;
constexpr std::uint32_t kInitSite = 10, kGrowSite = 20;
constexpr std::uint64_t kBigBytes = 2048;

struct PathRig : ProfilerRig {
  GraphWalker walker;

  explicit PathRig(std::uint32_t attempts = 3, std::size_t chunk = trace::kDefaultChunkPayload)
      : ProfilerRig(1 << 16, [&](ProfilerOptions& o) {
          o.chunk_payload = chunk;
          o.heap_walker = &walker;
          o.path_attempts = attempts;
        }) {
    REQUIRE(prof->define_type({kHolder, "Holder", 32, false}).ok());
    REQUIRE(prof->define_type({kBigArray, "Big[]", 16, true}).ok());
    REQUIRE(prof->define_type({kBig, "Big", kBigBytes, false}).ok());
    REQUIRE(prof->define_site({kInitSite, 0, "Main.init", 4}).ok());
    REQUIRE(prof->define_site({kGrowSite, 0, "Main.grow", 9}).ok());
  }
  void alloc(std::uint32_t site, std::uint32_t type, std::size_t off, std::uint64_t size) {
    prof->on_alloc(*thread, site, type, at(off), size);
  }
  // static Main.holder -> Holder .items -> Big[] [0] -> Big, [1] -> Big; a stack slot -> Big.
  void build_graph() {
    walker.add_root(RootKind::kStatic, "static Main.holder", at(0));
    walker.object(at(0), kHolder);
    walker.field(at(0), "items", at(256));
    walker.object(at(256), kBigArray).elements = {at(4096), at(8192)};
    walker.object(at(4096), kBig);
    walker.object(at(8192), kBig);
    walker.add_root(RootKind::kStackFrame, "thread main frame 0 slot 2", at(16384));
    walker.object(at(16384), kBig);
  }
};

std::vector<Address> addrs(const RootPath& p) {
  std::vector<Address> out;
  for (const PathStep& s : p.steps) out.push_back(s.addr);
  return out;
}

}  // namespace

TEST_CASE("leak paths: no suspects, no walk", "[core][paths]") {
  PathRig r;
  r.build_graph();
  r.alloc(kInitSite, kHolder, 0, 32);
  r.alloc(kInitSite, kBigArray, 256, 32);
  r.alloc(kInitSite, kBig, 4096, kBigBytes);
  r.alloc(kInitSite, kBig, 8192, kBigBytes);
  for (int e = 0; e < 10; ++e) {
    r.touch(4096);
    r.touch(8192);
    r.gc();
  }
  CHECK(r.leaks.empty());
  CHECK(r.walker.calls() == 0);
  CHECK(r.prof->stats().path_searches == 0);
  // And with nothing tracked at all.
  PathRig empty;
  for (int e = 0; e < 10; ++e) empty.gc();
  CHECK(empty.walker.calls() == 0);
}

TEST_CASE("leak paths: one walk per GC with new suspect pairs, a path per pair, on every report and in the trace", "[core][paths]") {
  PathRig r;
  r.build_graph();
  r.alloc(kInitSite, kHolder, 0, 32);
  r.alloc(kInitSite, kBigArray, 256, 32);
  r.alloc(kInitSite, kBig, 8192, kBigBytes);  // allocated first, but not the lowest address
  r.alloc(kInitSite, kBig, 4096, kBigBytes);
  r.alloc(kGrowSite, kBig, 16384, kBigBytes);
  r.gc();
  r.gc();
  CHECK(r.walker.calls() == 0);  // not stale yet
  r.gc();
  REQUIRE(r.leaks.size() == 3);
  CHECK(r.walker.begins == 1);
  CHECK(r.walker.ends == 1);
  CHECK(r.walker.root_walks == 1);
  CHECK(r.prof->stats().path_searches == 1);
  const RootPath* init = r.leaks[0].path;  // reports come in address order: 4096, 8192, 16384
  REQUIRE(init != nullptr);
  CHECK(r.leaks[1].path == init);
  CHECK(init->root_kind == RootKind::kStatic);
  CHECK(init->root_name == "static Main.holder");
  CHECK(addrs(*init) == std::vector<Address>{r.at(0), r.at(256), r.at(4096)});
  CHECK(init->steps[2].type_name == "Big");
  CHECK(format_path(*init) == fmt::format("static Main.holder -> (Holder {:#x}).items -> (Big[] {:#x})[0] -> (Big {:#x})", r.at(0),
                                          r.at(256), r.at(4096)));
  const RootPath* grow = r.leaks[2].path;
  REQUIRE(grow != nullptr);
  CHECK(grow != init);
  CHECK(grow->root_kind == RootKind::kStackFrame);
  CHECK(addrs(*grow) == std::vector<Address>{r.at(16384)});

  // More stale objects of a pair that has its path: no walk.
  r.alloc(kInitSite, kBig, 24576, kBigBytes);
  for (int e = 0; e < 4; ++e) r.gc();
  REQUIRE(r.leaks.size() == 4);
  CHECK(r.leaks[3].path == init);
  CHECK(r.walker.begins == 1);
  for (const LeakReport& l : r.prof->possible_leaks()) CHECK(l.path == (l.site_id == kInitSite ? init : grow));

  REQUIRE(r.prof->finish().ok());
  auto c = trace::load(std::span<const std::byte>(r.sink->data()));
  REQUIRE(c.ok());
  REQUIRE(c->paths.size() == 2);
  const trace::PathEvent& p = c->paths[0];
  CHECK(p.epoch == 2);
  CHECK(p.site == kInitSite);
  CHECK(p.type == kBig);
  CHECK(p.target == r.at(4096));
  CHECK(p.status == PathStatus::kFound);
  CHECK(p.objects_visited == 4);  // both roots' referents, the array, the first big: both targets found
  CHECK(p.path.root_name == "static Main.holder");
  CHECK(addrs(p.path) == addrs(*init));
  CHECK(p.path.steps[1].via == "items");
  CHECK(p.path.steps[2].via == "[0]");
  CHECK(p.path.steps[2].type_id == kBig);
  CHECK(c->paths[1].site == kGrowSite);
  CHECK(c->paths[1].path.root_kind == RootKind::kStackFrame);
}

TEST_CASE("leak paths: failed searches are retried up to path_attempts, declined walks cost none", "[core][paths]") {
  PathRig r(/*attempts=*/2);
  // No roots: nothing is reachable.
  r.walker.decline = true;
  std::size_t off = 4096;
  auto stale_one = [&] {
    r.alloc(kInitSite, kBig, off, kBigBytes);
    off += 4096;
    for (int e = 0; e < 3; ++e) r.gc();
  };
  stale_one();
  REQUIRE(r.leaks.size() == 1);
  CHECK(r.leaks[0].path == nullptr);
  CHECK(r.walker.begins == 1);  // asked, declined
  CHECK(r.walker.root_walks == 0);
  r.walker.decline = false;
  stale_one();
  CHECK(r.walker.root_walks == 1);  // attempt 1: unreachable
  stale_one();
  CHECK(r.walker.root_walks == 2);  // attempt 2
  stale_one();
  stale_one();
  CHECK(r.walker.root_walks == 2);  // out of attempts
  REQUIRE(r.leaks.size() == 5);
  for (const LeakReport& l : r.leaks) CHECK(l.path == nullptr);
  CHECK(r.prof->stats().path_searches == 2);
  REQUIRE(r.prof->finish().ok());
  auto c = trace::load(std::span<const std::byte>(r.sink->data()));
  REQUIRE(c.ok());
  REQUIRE(c->paths.size() == 2);  // the declined walk wrote nothing
  for (const trace::PathEvent& p : c->paths) {
    CHECK(p.status == PathStatus::kUnreachable);
    CHECK(p.objects_visited == 0);
    CHECK(p.path.steps.empty());
  }
  // No attempts at all: a walker that is never asked.
  PathRig none(/*attempts=*/0);
  none.build_graph();
  none.alloc(kInitSite, kBig, 4096, kBigBytes);
  for (int e = 0; e < 3; ++e) none.gc();
  REQUIRE(none.leaks.size() == 1);
  CHECK(none.leaks[0].path == nullptr);
  CHECK(none.walker.calls() == 0);
}

TEST_CASE("leak paths: a path longer than a trace chunk keeps its first steps", "[core][paths]") {
  PathRig r(3, /*chunk=*/256);
  // static -> node 0 -> node 1 -> ... -> node 39 -> Big (41 steps; a step is at least 14 bytes).
  r.walker.add_root(RootKind::kStatic, "static Main.chain", r.at(64));
  for (int i = 0; i < 40; ++i) {
    r.walker.object(r.at(64 + 32 * i), kHolder);
    r.walker.field(r.at(64 + 32 * i), "next", i < 39 ? r.at(64 + 32 * (i + 1)) : r.at(4096));
  }
  r.walker.object(r.at(4096), kBig);
  r.alloc(kInitSite, kBig, 4096, kBigBytes);
  for (int e = 0; e < 3; ++e) r.gc();
  REQUIRE(r.leaks.size() == 1);
  REQUIRE(r.leaks[0].path != nullptr);
  CHECK(r.leaks[0].path->steps.size() == 41);  // the profiler keeps it whole
  REQUIRE(r.prof->finish().ok());
  auto c = trace::load(std::span<const std::byte>(r.sink->data()));
  REQUIRE(c.ok());
  REQUIRE(c->paths.size() == 1);
  const RootPath& p = c->paths[0].path;
  CHECK(!p.steps.empty());
  CHECK(p.cut_steps > 0);
  CHECK(p.steps.size() + p.cut_steps == 41);
  CHECK(p.steps.front().addr == r.at(64));
  CHECK(p.steps.back().addr == r.at(64 + 32 * (p.steps.size() - 1)));
  CHECK(format_path(p).find("more steps") != std::string::npos);
}

}  // namespace test_leak_paths
