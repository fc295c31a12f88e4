// The bounded shortest-path search from roots (path_search.h) on a hand-built graph: the
// shortest path wins over root order, ties go to the first root, cycles terminate, labels and
// types come from the walker, an unreachable target, an exhausted object budget and the depth
// limit are each reported as such, several targets share one walk, and a walker that declines
// (or a search with no target) is not walked.
#include "graph_walker.h"

#include <objprof/path_search.h>

#include <catch2/catch.hpp>

#include <vector>

namespace test_path_search {

using namespace objprof;
using objprof::test::GraphWalker;

namespace {

enum : std::uint32_t { kCache = 1, kMap = 2, kTable = 3, kEntry = 4, kLeak = 5, kNode = 6 };
constexpr Address kCacheObj = 0x1000, kMapObj = 0x2000, kTableObj = 0x3000, kE1 = 0x4000, kE2 = 0x4100, kX = 0x5000;
constexpr Address kNode0 = 0x6000;  // frame chain: 0x6000 -> 0x6100 -> ... -> 0x6500 -> X
constexpr Address kLonely = 0x9000;  // an object nothing refers to

// Root 0: a stack slot whose chain reaches X in 7 steps; root 1: a static whose path reaches it
// in 5 (Cache .map Map .table Entry[] [3] Entry .value Leak). Cycles: the entries point at each
// other, the leak back at the cache, the last node at the first.
GraphWalker cache_graph() {
  GraphWalker g;
  g.add_root(RootKind::kStackFrame, "thread main frame 0 slot 3", kNode0);
  g.add_root(RootKind::kStatic, "static Cache.instance", kCacheObj);
  for (int i = 0; i < 6; ++i) {
    g.object(kNode0 + 0x100 * i, kNode);
    g.field(kNode0 + 0x100 * i, "next", i < 5 ? kNode0 + 0x100 * (i + 1) : kX);
    if (i == 5) g.field(kNode0 + 0x100 * i, "first", kNode0);
  }
  g.object(kCacheObj, kCache);
  g.field(kCacheObj, "map", kMapObj);
  g.object(kMapObj, kMap);
  g.field(kMapObj, "table", kTableObj);
  g.object(kTableObj, kTable).elements = {0, kE2, 0, kE1};
  g.object(kE1, kEntry);
  g.field(kE1, "next", kE2);
  g.field(kE1, "value", kX);
  g.object(kE2, kEntry);
  g.field(kE2, "next", kE1);
  g.object(kX, kLeak);
  g.field(kX, "owner", kCacheObj);
  g.object(kLonely, kLeak);
  return g;
}
constexpr std::uint64_t kReachable = 6 + 5 + 1;  // nodes, cache..entries, X

std::vector<Address> addrs(const RootPath& p) {
  std::vector<Address> out;
  for (const PathStep& s : p.steps) out.push_back(s.addr);
  return out;
}
std::vector<std::string> vias(const RootPath& p) {
  std::vector<std::string> out;
  for (const PathStep& s : p.steps) out.push_back(s.via);
  return out;
}

}  // namespace

TEST_CASE("path search: the shortest path from any root, with labels, types and the root's name", "[core][paths]") {
  GraphWalker g = cache_graph();
  auto r = find_path(g, kX);
  REQUIRE(r);
  REQUIRE(r->status == PathStatus::kFound);
  CHECK(r->path.root_kind == RootKind::kStatic);
  CHECK(r->path.root_name == "static Cache.instance");
  CHECK(addrs(r->path) == std::vector<Address>{kCacheObj, kMapObj, kTableObj, kE1, kX});
  CHECK(vias(r->path) == std::vector<std::string>{"", "map", "table", "[3]", "value"});
  std::vector<std::uint32_t> types;
  for (const PathStep& s : r->path.steps) types.push_back(s.type_id);
  CHECK(types == std::vector<std::uint32_t>{kCache, kMap, kTable, kEntry, kLeak});
  CHECK(r->path.cut_steps == 0);
  CHECK(format_path(r->path) ==
        "static Cache.instance -> (type#1 0x1000).map -> (type#2 0x2000).table -> (type#3 0x3000)[3] -> (type#4 0x4000).value -> "
        "(type#5 0x5000)");
  // One walk: the root's name and the types are asked for the path only.
  CHECK(g.begins == 1);
  CHECK(g.ends == 1);
  CHECK(g.root_walks == 1);
  CHECK(g.name_calls == 1);
  CHECK(g.type_calls == 5);
}

TEST_CASE("path search: equally short paths go to the first root, every time", "[core][paths]") {
  GraphWalker g;
  g.object(0x100, kNode);
  g.object(0x200, kNode);
  g.object(0x300, kLeak);
  g.field(0x100, "a", 0x300);
  g.field(0x200, "b", 0x300);
  g.add_root(RootKind::kGlobal, "global one", 0x100);
  g.add_root(RootKind::kHandle, "handle two", 0x200);
  for (int run = 0; run < 3; ++run) {
    auto r = find_path(g, 0x300);
    REQUIRE(r);
    REQUIRE(r->status == PathStatus::kFound);
    CHECK(r->path.root_name == "global one");
    CHECK(vias(r->path) == std::vector<std::string>{"", "a"});
  }
  std::swap(g.root_list[0], g.root_list[1]);
  auto r = find_path(g, 0x300);
  REQUIRE(r);
  CHECK(r->path.root_name == "handle two");
  CHECK(r->path.root_kind == RootKind::kHandle);
  CHECK(vias(r->path) == std::vector<std::string>{"", "b"});
}

TEST_CASE("path search: a root's referent is a one-step path", "[core][paths]") {
  GraphWalker g = cache_graph();
  auto r = find_path(g, kCacheObj);
  REQUIRE(r);
  REQUIRE(r->status == PathStatus::kFound);
  CHECK(addrs(r->path) == std::vector<Address>{kCacheObj});
  CHECK(vias(r->path) == std::vector<std::string>{""});
  CHECK(format_path(r->path) == "static Cache.instance -> (type#1 0x1000)");
}

TEST_CASE("path search: an unreachable target is reported after visiting everything reachable once", "[core][paths]") {
  GraphWalker g = cache_graph();
  auto r = find_path(g, kLonely);
  REQUIRE(r);
  CHECK(r->status == PathStatus::kUnreachable);
  CHECK(r->path.steps.empty());
  CHECK(r->path.root_name.empty());
  // The cycles are walked once: every reachable object is expanded exactly once.
  CHECK(r->objects_visited == kReachable);
  CHECK(g.reference_walks == kReachable);
  CHECK(g.name_calls == 0);
}

TEST_CASE("path search: an exhausted object budget is reported as such", "[core][paths]") {
  GraphWalker g = cache_graph();
  PathSearchOptions o;
  o.max_objects = 3;
  auto r = find_path(g, kX, o);
  REQUIRE(r);
  CHECK(r->status == PathStatus::kObjectBudget);
  CHECK(r->objects_visited == 3);
  CHECK(r->path.steps.empty());
  // Within the budget: both roots' referents are the first two objects visited.
  o.max_objects = 2;
  auto near = find_path(g, kCacheObj, o);
  REQUIRE(near);
  CHECK(near->status == PathStatus::kFound);
  // A budget that covers the reachable heap exactly still proves unreachability.
  o.max_objects = kReachable;
  auto all = find_path(g, kLonely, o);
  REQUIRE(all);
  CHECK(all->status == PathStatus::kUnreachable);
}

TEST_CASE("path search: the depth limit stops the search and is reported as such", "[core][paths]") {
  GraphWalker g = cache_graph();
  PathSearchOptions o;
  o.max_depth = 4;  // X is 5 steps from the static root
  auto r = find_path(g, kX, o);
  REQUIRE(r);
  CHECK(r->status == PathStatus::kDepthLimit);
  CHECK(r->objects_visited < kReachable);
  o.max_depth = 5;  // exactly deep enough
  auto at = find_path(g, kX, o);
  REQUIRE(at);
  REQUIRE(at->status == PathStatus::kFound);
  CHECK(at->path.steps.size() == 5);
  o.max_depth = 0;
  auto none = find_path(g, kCacheObj, o);
  REQUIRE(none);
  CHECK(none->status == PathStatus::kDepthLimit);
  // Unreachable and limited: the limit is what is reported (deeper objects were not looked at).
  o.max_depth = 3;
  auto lonely = find_path(g, kLonely, o);
  REQUIRE(lonely);
  CHECK(lonely->status == PathStatus::kDepthLimit);
}

TEST_CASE("path search: several targets share one walk", "[core][paths]") {
  GraphWalker g = cache_graph();
  const std::vector<Address> targets{kX, kMapObj, kLonely, kX, 0};
  auto r = find_paths(g, targets);
  REQUIRE(r.size() == targets.size());
  CHECK(g.begins == 1);
  CHECK(g.root_walks == 1);
  CHECK(r[0].status == PathStatus::kFound);
  CHECK(addrs(r[0].path) == std::vector<Address>{kCacheObj, kMapObj, kTableObj, kE1, kX});
  CHECK(r[1].status == PathStatus::kFound);
  CHECK(addrs(r[1].path) == std::vector<Address>{kCacheObj, kMapObj});
  CHECK(r[2].status == PathStatus::kUnreachable);
  CHECK(addrs(r[3].path) == addrs(r[0].path));
  CHECK(r[4].status == PathStatus::kUnreachable);  // null is no object
}

TEST_CASE("path search: a declined walk and an empty search call nothing more", "[core][paths]") {
  GraphWalker g = cache_graph();
  g.decline = true;
  CHECK_FALSE(find_path(g, kX));
  CHECK(g.begins == 1);
  CHECK(g.calls() == 1);  // not even end_walk
  GraphWalker idle = cache_graph();
  CHECK(find_paths(idle, std::vector<Address>{}).empty());
  CHECK(idle.calls() == 0);
}

TEST_CASE("format_path: type names, ids, unknown types and cut paths", "[core][paths]") {
  RootPath p;
  p.root_kind = RootKind::kRegistry;
  p.root_name = "Lua registry";
  p.steps = {{0x10, 7, "Config", ""}, {0x20, 8, "", "listeners"}, {0x30, kUnknownType, "", "[2]"}};
  CHECK(format_path(p) == "Lua registry -> (Config 0x10).listeners -> (type#8 0x20)[2] -> (? 0x30)");
  p.cut_steps = 2;
  CHECK(format_path(p) == "Lua registry -> (Config 0x10).listeners -> (type#8 0x20)[2] -> (? 0x30) -> ... (2 more steps)");
  p.root_name.clear();
  p.steps.clear();
  p.cut_steps = 1;
  CHECK(format_path(p) == "(registry root) -> ... (1 more step)");
  CHECK(std::string(root_kind_name(RootKind::kStackFrame)) == "stack frame");
  CHECK(std::string(path_status_name(PathStatus::kObjectBudget)) == "object budget exhausted");
}

}  // namespace test_path_search
