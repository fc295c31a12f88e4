// Report views on a hand-made trace whose every number is worked out by hand: per site / type
// / thread tables with lifetime buckets, the leak ranking, survival and pretenuring hints,
// cohorts, size demographics, heap volume per thread, the live-heap diff, --min-age, and that
// build_report (one fused parallel pass) agrees with each view computed alone.
#include "trace_builder.h"

#include <objprof/analysis/analyzer.h>
#include <objprof/analysis/report.h>

#include <catch2/catch.hpp>

namespace test_views {

using namespace objprof;
using namespace objprof::analysis;
using objprof::test::TraceBuilder;

namespace {

// Epoch 0: 4 Small (A.short, 16 B) die in GC 0; 3 Big (B.keep, 64 B; one from thread 1) live to
// the end, never touched after epoch 0; 2 Mid (C.mid, 32 B) die in GC 2. Epoch 1: 2 more Small
// at reused addresses, dead in GC 1. GCs 3-5 see nothing. The trace ends in epoch 6.
TraceAnalysis scenario() {
  TraceBuilder b;
  b.type(1, "Small", 16);
  b.type(2, "Big", 64);
  b.type(3, "Mid", 32);
  b.site(10, "A.short", 1);
  b.site(11, "B.keep", 2);
  b.site(12, "C.mid", 3);
  b.thread(0, "main");
  b.thread(1, "worker");
  for (std::uint64_t i = 0; i < 4; ++i) b.alloc(0, 10, 1, 0x10000 + 16 * i, 16);  // ids 0-3, clocks 0..48
  b.alloc(0, 11, 2, 0x10100, 64);                                                 // id 4, clock 64
  b.alloc(0, 11, 2, 0x10140, 64);                                                 // id 5, clock 128
  b.alloc(0, 12, 3, 0x10200, 32);                                                 // id 6, clock 192
  b.alloc(0, 12, 3, 0x10220, 32);                                                 // id 7, clock 224
  b.alloc(1, 11, 2, 0x10300, 64);                                                 // id 8, clock 256
  b.gc({0x10000, 0x10100, 0x10200}, {0x10000, 0x10010, 0x10020, 0x10030});
  b.alloc(0, 10, 1, 0x10000, 16);  // id 9, clock 320
  b.alloc(0, 10, 1, 0x10010, 16);  // id 10, clock 336
  b.gc({0x10200, 0x10220}, {0x10000, 0x10010});
  b.gc({0x10220}, {0x10200, 0x10220});
  b.gc({});
  b.gc({});
  b.gc({});
  b.end();
  auto r = analyze(b.take());
  REQUIRE(r.ok());
  return std::move(*r);
}

const GroupRow& row_named(const GroupTable& t, const std::string& name) {
  for (const GroupRow& r : t.rows)
    if (r.name == name) return r;
  FAIL("no row " << name);
  return t.rows.front();
}

}  // namespace

TEST_CASE("views: the scenario's chains and totals", "[analysis][views]") {
  const TraceAnalysis a = scenario();
  CHECK(a.objects.size() == 11);
  CHECK(a.total_bytes == 352);
  CHECK(a.live_objects == 3);
  CHECK(a.live_bytes == 192);
  CHECK(a.end_epoch == 6);
  CHECK(a.end_bytes == 352);
  CHECK(a.objects.birth_bytes(9) == 320);
  CHECK(a.objects.birth_epoch(9) == 1);
  CHECK(a.gcs[2].freed_objects == 2);
  CHECK(a.gcs[2].live_bytes_after == 192);
}

TEST_CASE("views: per site, type and thread tables with lifetime buckets", "[analysis][views]") {
  const TraceAnalysis a = scenario();
  const LifetimeBuckets buckets;  // 0,1,2,4,...
  CHECK(buckets.labels() == std::vector<std::string>{"0", "1", "2-3", "4-7", "8-15", "16-31", "32-63", "64+"});
  const GroupTable sites = group_table(a, GroupBy::kSite, buckets);
  REQUIRE(sites.rows.size() == 3);
  CHECK(sites.rows[0].name == "B.keep@2");  // by allocated bytes
  CHECK(sites.rows[1].name == "A.short@1");
  CHECK(sites.rows[2].name == "C.mid@3");
  const GroupRow& b = sites.rows[0];
  CHECK(b.allocated_objects == 3);
  CHECK(b.allocated_bytes == 192);
  CHECK(b.live_objects == 3);
  CHECK(b.dead_objects == 0);
  const GroupRow& s = sites.rows[1];
  CHECK(s.allocated_objects == 6);
  CHECK(s.live_objects == 0);
  CHECK(s.lifetime_buckets == std::vector<std::uint64_t>{6, 0, 0, 0, 0, 0, 0, 0});
  const GroupRow& c = sites.rows[2];
  CHECK(c.lifetime_buckets == std::vector<std::uint64_t>{0, 0, 2, 0, 0, 0, 0, 0});
  CHECK(c.mean_lifetime_gcs == Approx(2.0));
  CHECK(c.mean_lifetime_bytes == Approx(144.0));  // (352-192 + 352-224) / 2
  CHECK(sites.total.allocated_objects == 11);
  CHECK(sites.total.lifetime_buckets == std::vector<std::uint64_t>{6, 0, 2, 0, 0, 0, 0, 0});

  const GroupTable types = group_table(a, GroupBy::kType, buckets, {}, 2);
  REQUIRE(types.rows.size() == 2);  // cut to the top 2
  CHECK(types.groups == 3);
  CHECK(types.rows[0].name == "Big");
  CHECK(types.rows[1].name == "Small");

  const GroupTable threads = group_table(a, GroupBy::kThread, buckets);
  CHECK(row_named(threads, "main").allocated_objects == 10);
  CHECK(row_named(threads, "main").allocated_bytes == 288);
  CHECK(row_named(threads, "worker").live_bytes == 64);

  auto byte_buckets = parse_lifetime_buckets("0,100,1K", Clock::kBytes);
  REQUIRE(byte_buckets.ok());
  const GroupTable by_bytes = group_table(a, GroupBy::kSite, *byte_buckets);
  CHECK(row_named(by_bytes, "C.mid@3").lifetime_buckets == std::vector<std::uint64_t>{0, 2, 0});  // 160 and 128 bytes
}

TEST_CASE("views: leak ranking by stale byte-epochs with the most stale object's chain", "[analysis][views]") {
  const TraceAnalysis a = scenario();
  const LeakReport l = leak_report(a, LeakOptions{4, 0, 0});
  REQUIRE(l.sites.size() == 1);
  CHECK(a.sites[l.sites[0].site].method == "B.keep");
  CHECK(l.sites[0].objects == 3);
  CHECK(l.sites[0].bytes == 192);
  CHECK(l.sites[0].max_idle_epochs == 5);
  CHECK(l.sites[0].score == 3 * 64 * 5);
  CHECK(l.sites[0].oldest == 4);  // equal idle and size: the oldest id
  CHECK(l.sites[0].oldest_chain.placements.front().addr == 0x10100);
  CHECK(leak_report(a, LeakOptions{6, 0, 0}).sites.empty());     // idle 5 < 6
  CHECK(leak_report(a, LeakOptions{4, 100, 0}).sites.empty());   // 64-byte objects < 100
  CHECK(leak_report(a, LeakOptions{4, 0, 0}, ObjectFilter{7}).sites.empty());  // --min-age 7: all too young
}

TEST_CASE("views: survival per site and the pretenuring hint", "[analysis][views]") {
  const TraceAnalysis a = scenario();
  SurvivalOptions o;
  o.pretenure_min_objects = 2;
  const SurvivalTable t = survival_table(a, o);
  CHECK(t.thresholds == std::vector<std::uint32_t>{1, 2, 4});
  auto row = [&](const char* method) -> const SurvivalRow& {
    for (const SurvivalRow& r : t.rows)
      if (a.sites[r.site].method == method) return r;
    FAIL(method);
    return t.rows.front();
  };
  CHECK(row("A.short").survived == std::vector<std::uint64_t>{0, 0, 0});
  CHECK(row("A.short").eligible == std::vector<std::uint64_t>{6, 6, 6});
  CHECK_FALSE(row("A.short").pretenure);
  CHECK(row("B.keep").survived == std::vector<std::uint64_t>{3, 3, 3});
  CHECK(row("B.keep").pretenure);
  CHECK(row("C.mid").survived == std::vector<std::uint64_t>{2, 2, 0});
  CHECK(row("C.mid").eligible == std::vector<std::uint64_t>{2, 2, 2});
  CHECK(row("C.mid").pretenure);  // all survive 2 GCs
  o.pretenure_gcs = 4;
  const SurvivalTable t4 = survival_table(a, o);
  for (const SurvivalRow& r : t4.rows) CHECK(r.pretenure == (a.sites[r.site].method == std::string("B.keep")));
  o.pretenure_min_objects = 16;
  for (const SurvivalRow& r : survival_table(a, o).rows) CHECK_FALSE(r.pretenure);  // too few objects
}

TEST_CASE("views: cohorts, size demographics and heap volume per thread", "[analysis][views]") {
  const TraceAnalysis a = scenario();
  const CohortView c = cohort_view(a, CohortOptions{128, 64});
  CHECK(c.cohort_bytes == 128);
  CHECK(c.timeline.epochs == std::vector<std::uint32_t>{0, 1, 2, 3, 4, 5, 6});
  REQUIRE(c.cohorts.size() == 3);
  CHECK(c.cohorts[0].allocated_objects == 5);
  CHECK(c.cohorts[0].live_bytes == std::vector<std::uint64_t>(7, 64));
  CHECK(c.cohorts[1].allocated_objects == 3);
  CHECK(c.cohorts[1].live_objects == std::vector<std::uint64_t>{3, 3, 1, 1, 1, 1, 1});
  CHECK(c.cohorts[1].mean_lifetime_bytes == Approx(144.0));
  CHECK(c.cohorts[1].mean_lifetime_bytes_so_far[1] == 0.0);
  CHECK(c.cohorts[1].mean_lifetime_bytes_so_far[2] == Approx(144.0));
  CHECK(c.cohorts[2].allocated_bytes == 96);
  CHECK(c.cohorts[2].live_objects == std::vector<std::uint64_t>(7, 1));
  // Cohort size is raised until at most max_cohorts cohorts remain.
  CHECK(cohort_bytes_for(a, CohortOptions{16, 4}) == 128);

  const SizeDemographics s = size_demographics(a);
  REQUIRE(s.exact);
  REQUIRE(s.bins.size() == 3);
  CHECK(s.bins[0].min == 16);
  CHECK(s.bins[0].allocated_objects == 6);
  CHECK(s.bins[0].live_objects == 0);
  CHECK(s.bins[2].min == 64);
  CHECK(s.bins[2].live_bytes == 192);
  const SizeDemographics p = size_demographics(a, {}, 2);  // too many sizes for exact bins
  REQUIRE_FALSE(p.exact);
  REQUIRE(p.bins.size() == 3);
  CHECK(p.bins[1].min == 17);
  CHECK(p.bins[1].max == 32);

  const LiveSeriesView v = live_series(a, GroupBy::kThread);
  REQUIRE(v.series.size() == 2);
  CHECK(a.threads[v.series[0].group].name == "main");
  CHECK(v.series[0].live_bytes == std::vector<std::uint64_t>{192, 192, 128, 128, 128, 128, 128});
  CHECK(v.series[1].live_bytes == std::vector<std::uint64_t>(7, 64));

  const Timeline thin = make_timeline(a, 3);
  CHECK(thin.epochs.back() == 6);
  CHECK(thin.size() <= 4);
  CHECK(thin.first_sample(0) == 0);
}

TEST_CASE("views: live-heap diff by object identity, and --min-age", "[analysis][views]") {
  const TraceAnalysis a = scenario();
  auto d = heap_diff(a, 0, a.end_epoch);
  REQUIRE(d.ok());
  CHECK(d->kept.objects == 3);
  CHECK(d->kept.bytes == 192);
  CHECK(d->died.objects == 2);
  CHECK(d->born.objects == 0);
  auto d01 = heap_diff(a, 0, 1);
  REQUIRE(d01.ok());
  CHECK(d01->kept.objects == 5);
  CHECK(d01->died.objects == 0);
  CHECK_FALSE(heap_diff(a, 3, 1).ok());
  CHECK_FALSE(heap_diff(a, 0, 7).ok());
  auto parsed = parse_diff_epochs("1:end", a);
  REQUIRE(parsed.ok());
  CHECK(parsed->second == 6);
  CHECK_FALSE(parse_diff_epochs("x:1", a).ok());
  CHECK(parse_diff_epochs("2:1", a).error().code == ErrorCode::kInvalidArgument);

  ReportOptions o;
  o.filter.min_age_gcs = 1;
  o.diff = std::pair<std::uint32_t, std::uint32_t>{0, 6};
  auto r = build_report(a, o);
  REQUIRE(r.ok());
  CHECK(r->objects_considered == 5);  // the six Small objects lived 0 GCs
  CHECK(r->sites.groups == 2);
  REQUIRE(r->diff);
  CHECK(r->diff->died.objects == 2);
  CHECK(r->survival.rows.size() == 3);  // survival always sees every object
}

TEST_CASE("views: the fused report pass equals each view computed alone", "[analysis][views]") {
  const TraceAnalysis a = scenario();
  ReportOptions o;
  o.top = 2;
  o.cohorts.cohort_bytes = 64;
  o.replay = true;
  o.leaks.stale_after_bytes = 0;  // the scenario's epochs allocate too little to be a program's progress
  auto r = build_report(a, o);
  REQUIRE(r.ok());
  const GroupTable sites = group_table(a, GroupBy::kSite, o.buckets, {}, 2);
  REQUIRE(r->sites.rows.size() == sites.rows.size());
  for (std::size_t i = 0; i < sites.rows.size(); ++i) {
    CHECK(r->sites.rows[i].name == sites.rows[i].name);
    CHECK(r->sites.rows[i].lifetime_buckets == sites.rows[i].lifetime_buckets);
  }
  const CohortView c = cohort_view(a, o.cohorts);
  REQUIRE(r->cohorts.cohorts.size() == c.cohorts.size());
  for (std::size_t i = 0; i < c.cohorts.size(); ++i) CHECK(r->cohorts.cohorts[i].live_bytes == c.cohorts[i].live_bytes);
  CHECK(r->leaks.sites.size() == 1);
  REQUIRE(r->replay);
  CHECK(r->replay->segments_total > 0);
}

TEST_CASE("views: heap replay segments of a window, and an object's path", "[analysis][views]") {
  TraceBuilder b;
  b.type(1, "T", 32);
  b.site(1, "m", 0);
  b.thread(0, "main");
  b.alloc(0, 1, 1, 0x10000, 32);  // A: moves out of the window at GC 0
  b.alloc(0, 1, 1, 0x10040, 32);  // B: dies in GC 1
  b.alloc(0, 1, 1, 0x18000, 32);  // C: outside, moves in at GC 1
  b.gc({}, {}, {{0x10000, 0x18100}});
  b.alloc(0, 1, 1, 0x10080, 32);  // D
  b.gc({}, {0x10040}, {{0x18000, 0x10000}});
  b.end();
  auto a = analyze(b.take());
  REQUIRE(a.ok());
  ReplayOptions o;
  o.window = ReplayWindow{0x10000, 0x1000};
  auto r = heap_replay(*a, o);
  REQUIRE(r.ok());
  REQUIRE(r->segments.size() == 4);  // A's first stay, B, D, C's second stay
  CHECK(r->segments[0].id == 0);
  CHECK(r->segments[0].end == ReplaySegment::End::kMoved);
  CHECK(r->segments[0].t_to == a->gcs[0].bytes_begin);
  CHECK(r->segments[1].id == 1);
  CHECK(r->segments[1].end == ReplaySegment::End::kDied);
  CHECK(r->segments[1].t_collected_to >= r->segments[1].t_to);
  CHECK(r->segments[3].id == 2);
  CHECK(r->segments[3].end == ReplaySegment::End::kAlive);
  CHECK(r->segments[3].addr == 0x10000);
  o.follow = 0;
  o.window.reset();
  auto f = heap_replay(*a, o);
  REQUIRE(f.ok());
  REQUIRE(f->path.size() == 3);  // birth, the move, the end
  CHECK(f->path[1].addr == 0x18100);
  CHECK(f->window.begin <= 0x10000);
  CHECK(f->window.begin + f->window.bytes >= 0x18120);
  const std::string svg = replay_svg(*a, *f);
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK(svg.find("class=\"follow\"") != std::string::npos);
  o.follow = 99;
  CHECK_FALSE(heap_replay(*a, o).ok());
  CHECK(parse_replay_window("0x10000:16K")->bytes == 16384);
  CHECK(parse_replay_window("4096:1M")->begin == 4096);
  CHECK_FALSE(parse_replay_window("0x10000").ok());
  CHECK_FALSE(parse_replay_window("0xzz:1K").ok());
  CHECK_FALSE(parse_replay_window("0x10:0").ok());
}

TEST_CASE("lifetime buckets: parsing and labels", "[analysis][views]") {
  auto g = parse_lifetime_buckets("1,2,5", Clock::kGcs);
  REQUIRE(g.ok());
  CHECK(g->bounds == std::vector<std::uint64_t>{0, 1, 2, 5});
  CHECK(g->labels() == std::vector<std::string>{"0", "1", "2-4", "5+"});
  CHECK(g->index(0) == 0);
  CHECK(g->index(4) == 2);
  CHECK(g->index(1000) == 3);
  auto b = parse_lifetime_buckets("0,64K,1M", Clock::kBytes);
  REQUIRE(b.ok());
  CHECK(b->bounds == std::vector<std::uint64_t>{0, 65536, 1048576});
  CHECK(b->labels().back() == "1.0 MiB+");
  CHECK_FALSE(parse_lifetime_buckets("1,1", Clock::kGcs).ok());
  CHECK_FALSE(parse_lifetime_buckets("1,,2", Clock::kGcs).ok());
  CHECK_FALSE(parse_lifetime_buckets("4K", Clock::kGcs).ok());
}

}  // namespace test_views
