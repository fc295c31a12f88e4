// The per-site cache plan (sim/cache_plan.h): the cost model's choices on hand-made and random
// profiles against an independent evaluation of the model, and on the workloads: the profile is
// the cache's real behaviour, a planned run marks exactly what an unplanned one does, and on
// the profiled input it hits at least as often as the plan predicts.
#include "sim/cache_plan.h"
#include "sim/heap.h"
#include "sim/interp.h"
#include "sim/jit/jit.h"
#include "sim/workloads.h"

#include "../test_env.h"
#include "sim_test_support.h"

#include <objprof/ir/text.h>
#include <objprof/objprof.h>
#include <objprof/trace_reader.h>

#include <catch2/catch.hpp>

#include <optional>
#include <random>

namespace objprof::sim::test_cache_plan {
namespace {

// The model of cache_plan.h, written out again: per site, kNone pays the barrier, kStore the
// barrier and a store, kCompare a compare always and the barrier and a store on a miss; a hit
// at a comparing site counts when the site that stored the object still stores.
double model_cost(const CacheProfile& p, const std::vector<CacheUse>& use, const CacheCosts& c) {
  std::vector<double> hits(use.size(), 0);
  for (const auto& [edge, n] : p.fed)
    if (use[edge.first] != CacheUse::kNone) hits[edge.second] += static_cast<double>(n);
  double total = 0;
  for (std::size_t s = 0; s < use.size(); ++s) {
    const double e = static_cast<double>(p.executed[s]);
    if (use[s] == CacheUse::kNone) total += e * c.barrier;
    else if (use[s] == CacheUse::kStore) total += e * (c.barrier + c.store);
    else total += e * c.compare + (e - hits[s]) * (c.barrier + c.store);
  }
  return total;
}

CacheProfile profile_of(std::size_t sites) {
  std::vector<CacheSiteKey> keys;
  for (std::uint32_t i = 0; i < sites; ++i) keys.push_back({0, i, 0});
  return CacheProfile::empty_for(std::move(keys));
}

void feed(CacheProfile& p, std::uint32_t producer, std::uint32_t consumer, std::uint64_t n) {
  p.fed[{producer, consumer}] += n;
  p.hits[consumer] += n;
}

}  // namespace

TEST_CASE("cache plan: a site compares where its hits pay, stores where it feeds hits, else neither", "[sim][cache]") {
  const CacheCosts c{2, 1, 13};
  CacheProfile p = profile_of(4);
  p.executed = {1000, 1000, 1000, 1000};
  feed(p, 0, 0, 900);  // 0: a loop over one object, 90 % hits
  feed(p, 2, 1, 600);  // 1: finds what 2 stored, 60 % of the time; 2 itself never hits
  feed(p, 3, 3, 50);   // 3: 5 % hits, not worth a compare
  const CachePlan plan = plan_cache(p, c);
  REQUIRE(plan.use.size() == 4);
  CHECK(plan.use[0] == CacheUse::kCompare);
  CHECK(plan.use[1] == CacheUse::kCompare);
  CHECK(plan.use[2] == CacheUse::kStore);
  CHECK(plan.use[3] == CacheUse::kNone);
  CHECK(plan.cost_plan == Approx(model_cost(p, plan.use, c)));
  CHECK(plan.cost_plan < plan.cost_none);
  CHECK(plan.cost_plan < plan.cost_all_compare);
  CHECK(plan.count(CacheUse::kCompare) == 2);
  // A producer that executes far more often than the hits it feeds are worth does not store,
  // and then its consumer's compare does not pay either.
  p.executed[2] = 100000;
  const CachePlan costly = plan_cache(p, c);
  CHECK(costly.use[2] == CacheUse::kNone);
  CHECK(costly.use[1] == CacheUse::kNone);
  CHECK(costly.use[0] == CacheUse::kCompare);
}

TEST_CASE("cache plan: on random profiles the plan is no worse than no cache or the cache everywhere, and "
          "no single site's change improves it", "[sim][cache]") {
  std::mt19937_64 rng(42);
  const CacheCosts costs[] = {CacheCosts::x86_64(false), CacheCosts::arm64(false), CacheCosts::arm64(true)};
  const int rounds = static_cast<int>(test::scaled(300, 4));
  for (int round = 0; round < rounds; ++round) {
    const std::size_t n = 1 + rng() % 12;
    CacheProfile p = profile_of(n);
    for (std::size_t s = 0; s < n; ++s) p.executed[s] = 1 + rng() % 1000;
    // Hits no more than a consumer's executions, spread over random producers.
    for (std::uint32_t s = 0; s < n; ++s) {
      std::uint64_t left = rng() % (p.executed[s] + 1);
      while (left > 0) {
        const std::uint64_t k = 1 + rng() % left;
        feed(p, static_cast<std::uint32_t>(rng() % n), s, k);
        left -= k;
      }
    }
    const CacheCosts& c = costs[round % 3];
    const CachePlan plan = plan_cache(p, c);
    INFO("round " << round << " sites " << n);
    const double cost = model_cost(p, plan.use, c);
    CHECK(cost == Approx(plan.cost_plan));
    CHECK(cost <= model_cost(p, std::vector<CacheUse>(n, CacheUse::kNone), c) + 1e-6);
    CHECK(cost <= model_cost(p, std::vector<CacheUse>(n, CacheUse::kCompare), c) + 1e-6);
    for (std::size_t s = 0; s < n; ++s)
      for (CacheUse u : {CacheUse::kCompare, CacheUse::kStore, CacheUse::kNone}) {
        std::vector<CacheUse> other = plan.use;
        other[s] = u;
        CHECK(model_cost(p, other, c) >= cost - 1e-6);
      }
  }
}

namespace {

struct Run {
  std::int64_t result = 0;
  InterpStats interp;
  ProfilerStats prof;
  std::vector<std::vector<std::pair<std::uint64_t, std::uint64_t>>> bitmaps;  // per epoch
  std::vector<std::string> leaks;
  std::optional<CacheProfile> profile;
};

// One interpreted single-thread run with a counting, caching racy barrier.
Run run(const LoadedWorkload& wl, std::uint64_t size, bool profile, std::shared_ptr<const CachePlan> plan,
        ir::PassKind pass = ir::PassKind::kGlobal, std::uint32_t threads = 1) {
  ProfilerOptions po;
  po.default_leak_printer = false;
  po.on_leak = {};
  auto sink = std::make_unique<MemorySink>();
  MemorySink* bytes = sink.get();
  po.trace_sink = std::move(sink);
  auto prof = Profiler::create(std::move(po));
  REQUIRE(prof.ok());
  HeapOptions ho;
  ho.heap_bytes = 256 << 10;
  auto heap = Heap::create(ho, prof->get());
  REQUIRE(heap.ok());
  InterpOptions io;
  io.pass = pass;
  io.barrier = BarrierConfig{true, MarkMode::kRacy, true};
  io.size = size;
  io.threads = threads;
  io.profile_cache = profile;
  io.cache_plan = std::move(plan);
  auto interp = Interpreter::create(wl.module, **heap, prof->get(), io);
  REQUIRE(interp.ok());
  auto r = (*interp)->run("main");
  REQUIRE(r.ok());
  Run out;
  out.result = *r;
  out.interp = (*interp)->stats();
  REQUIRE((*prof)->finish().ok());
  out.prof = (*prof)->stats();
  auto contents = trace::load(bytes->data());
  REQUIRE(contents.ok());
  for (const auto& b : contents->bitmaps) out.bitmaps.push_back(b.words);
  for (const LeakReport& l : (*prof)->possible_leaks())
    out.leaks.push_back(std::string(l.method) + " " + std::to_string(l.bytecode_offset) + " " + std::string(l.type_name));
  if (profile) {
    auto p = (*interp)->cache_profile();
    REQUIRE(p.ok());
    out.profile = std::move(*p);
  }
  return out;
}

// Hits the plan's model counts at comparing sites: from producers that still store.
double predicted_hits(const CacheProfile& p, const CachePlan& plan) {
  double h = 0;
  for (const auto& [edge, n] : p.fed)
    if (plan.use[edge.second] == CacheUse::kCompare && plan.use[edge.first] != CacheUse::kNone) h += static_cast<double>(n);
  return h;
}

}  // namespace

TEST_CASE("cache plan: the profile is the cache's behaviour, and a planned run marks the same and hits at least "
          "as often as predicted", "[sim][cache]") {
  std::uint64_t planned_sites = 0, non_comparing = 0;
  for (const char* name : {"listleak", "swapleak", "points", "scimark", "graph"}) {
    auto wl = load_workload(name);
    REQUIRE(wl.ok());
    const std::uint64_t size = std::string(name) == "scimark" ? 16 : 60;
    INFO(name);
    const Run profiled = run(*wl, size, true, nullptr);
    REQUIRE(profiled.profile);
    const CacheProfile& p = *profiled.profile;
    // Every kept barrier executed is counted at its site; the simulated cache is the real one:
    // the same hits as the counting barrier that compared at every site.
    CHECK(p.total_executed() == profiled.interp.barriers_executed);
    CHECK(p.total_hits() == profiled.prof.barrier_cache_hits);
    std::uint64_t fed = 0;
    for (const auto& [edge, n] : p.fed) fed += n;
    CHECK(fed + p.unproduced_hits == p.total_hits());
    for (std::size_t s = 0; s < p.sites.size(); ++s) CHECK(p.hits[s] <= p.executed[s]);
    // Profiling changes nothing the profiler sees.
    const Run plain = run(*wl, size, false, nullptr);
    CHECK(plain.bitmaps == profiled.bitmaps);
    CHECK(plain.prof.barrier_cache_hits == profiled.prof.barrier_cache_hits);

    auto plan = std::make_shared<CachePlan>(plan_cache(p, CacheCosts::x86_64(false)));
    const Run planned = run(*wl, size, false, plan);
    CHECK(planned.result == plain.result);
    CHECK(planned.bitmaps == plain.bitmaps);  // the cache only skips marks already made
    CHECK(planned.leaks == plain.leaks);
    CHECK(planned.interp.barriers_executed == plain.interp.barriers_executed);
    CHECK(static_cast<double>(planned.prof.barrier_cache_hits) >= predicted_hits(p, *plan));
    CHECK(plan->cost_plan <= plan->cost_all_compare);
    planned_sites += plan->use.size();
    non_comparing += plan->count(CacheUse::kStore) + plan->count(CacheUse::kNone);
  }
  CHECK(non_comparing > 0);  // the workloads do have sites where the cache does not pay
  CHECK(non_comparing < planned_sites);
}

TEST_CASE("cache plan: the profile follows the barrier's rules for null: a hit on an empty cache, never stored",
          "[sim][cache]") {
  auto m = ir::parse_module(R"(type Node { val: int }
func main(v0, v1, v2) regs 9 {
entry:
  v3 = null
  v4 = new Node
  v8 = new Node
  v5 = refeq v3, v3
  v6 = refeq v4, v3
  v7 = refeq v4, v4
  v7 = refeq v3, v8
  v7 = refeq v8, v8
  ret v5
}
)", "nulls");
  REQUIRE(m.ok());
  LoadedWorkload wl;
  wl.module = std::move(*m);
  const Run r = run(wl, 1, true, nullptr, ir::PassKind::kNone);
  REQUIRE(r.profile);
  // null, null on the empty cache: 2 hits; v4 stored, null misses and keeps v4; v4, v4: 2 hits;
  // null misses, v8 stored; v8, v8: 2 hits.
  CHECK(r.profile->total_hits() == 6);
  CHECK(r.profile->unproduced_hits == 2);
  CHECK(r.prof.barrier_cache_hits == r.profile->total_hits());
  CHECK(r.profile->total_executed() == 10);
}

TEST_CASE("cache plan: mutator threads profile their own caches and the counts add up", "[sim][cache]") {
  auto wl = load_workload("threads");
  REQUIRE(wl.ok());
  const Run profiled = run(*wl, 60, true, nullptr, ir::PassKind::kGlobal, 3);
  REQUIRE(profiled.profile);
  const CacheProfile& p = *profiled.profile;
  CHECK(p.total_executed() == profiled.interp.barriers_executed);
  // Each thread's simulated cache is its own, as each thread's real cache is.
  CHECK(p.total_hits() == profiled.prof.barrier_cache_hits);
  auto plan = std::make_shared<CachePlan>(plan_cache(p, CacheCosts::arm64(false)));
  const Run planned = run(*wl, 60, false, plan, ir::PassKind::kGlobal, 3);  // interleaving differs run to run
  CHECK(planned.interp.barriers_executed > 0);
  CHECK(planned.interp.accesses > planned.interp.barriers_executed);
}

TEST_CASE("cache plan: a plan for other code and profiling compiled code are refused", "[sim][cache]") {
  auto listleak = load_workload("listleak");
  auto points = load_workload("points");
  REQUIRE(listleak.ok());
  REQUIRE(points.ok());
  const Run profiled = run(*listleak, 20, true, nullptr);
  // A fresh heap and profiler for each interpreter.
  auto create = [](const ir::Module& m, const InterpOptions& io) -> Status {
    test::SimRig rig(256 << 10);
    auto interp = Interpreter::create(m, *rig.heap, rig.prof.get(), io);
    if (!interp.ok()) return interp.error();
    if (!io.profile_cache && !(*interp)->cache_profile().ok()) return make_error(ErrorCode::kInvalidArgument, "no profile");
    return Status::Ok();
  };
  InterpOptions io;
  io.pass = ir::PassKind::kGlobal;
  io.cache_plan = std::make_shared<CachePlan>(plan_cache(*profiled.profile, CacheCosts::x86_64(false)));
  const Status wrong = create(points->module, io);
  REQUIRE_FALSE(wrong.ok());
  CHECK(wrong.error().message.find("cache plan was made for other code") != std::string::npos);
  io.profile_cache = true;  // the right code: accepted (a profiled run may follow a plan too)
  CHECK(create(listleak->module, io).ok());
  // The same module under another pass keeps other sites.
  const Run points_profiled = run(*points, 10, true, nullptr);
  io.cache_plan = std::make_shared<CachePlan>(plan_cache(*points_profiled.profile, CacheCosts::x86_64(false)));
  io.pass = ir::PassKind::kNone;
  CHECK_FALSE(create(points->module, io).ok());
  // Without profile_cache there is no profile.
  io.cache_plan = nullptr;
  io.profile_cache = false;
  const Status unprofiled = create(listleak->module, io);
  REQUIRE_FALSE(unprofiled.ok());
  CHECK(unprofiled.error().message == "no profile");
  // Compiled code keeps no per-site counts.
  InterpOptions jit_profile;
  jit_profile.profile_cache = true;
  jit_profile.jit = jit::make_jit();
  const Status compiled = create(listleak->module, jit_profile);
  REQUIRE_FALSE(compiled.ok());
  CHECK(compiled.error().message.find("profile_cache needs interpreted code") != std::string::npos);
}

}  // namespace objprof::sim
