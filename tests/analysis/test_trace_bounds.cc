// What the trace reader bounds (docs/trace-format.md, "Bounds"): object sizes, bytes-allocated
// totals, epochs, and addresses against the spaces the header declares. Each limit is a clear
// kCorrupt error naming the record and the value; traces inside the limits analyze exactly,
// the largest allowed sizes included.
#include "trace_builder.h"

#include <objprof/analysis/analyzer.h>
#include <objprof/analysis/cohorts.h>
#include <objprof/analysis/live_series.h>
#include <objprof/analysis/report.h>
#include <objprof/analysis/report_text.h>
#include <objprof/trace_reader.h>

#include <catch2/catch.hpp>

#include <limits>

namespace test_trace_bounds {

using namespace objprof;
using namespace objprof::analysis;
using objprof::test::TraceBuilder;

namespace {

constexpr std::uint64_t kBig = std::uint64_t{1} << 60;  // a space wide enough for the largest objects

// A trace whose one space is [0x10000, 0x10000 + kBig), with a type, a site and a thread.
TraceBuilder wide() {
  TraceBuilder b({{0, 0x10000, 0x10000 + kBig, "huge"}});
  b.type(1, "T", 16);
  b.site(10, "A.m", 1);
  b.thread(0, "main");
  return b;
}

std::string load_error(std::vector<std::byte> data) {
  auto r = trace::load(data);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ErrorCode::kCorrupt);
  return r.error().message;
}

}  // namespace

TEST_CASE("trace bounds: an allocation of 2^63 bytes is refused, not summed into a signed overflow", "[trace][regression]") {
  // The analyzer used to sum such sizes as int64 (LiveSeriesBuilder::add, CohortBuilder::add)
  // and reported "7744.0 PiB" allocated; tests/fuzz/corpus/trace/regression-alloc-size-2e63.trace
  // is the same input for the fuzz targets.
  for (std::uint64_t size : {std::uint64_t{1} << 63, std::numeric_limits<std::uint64_t>::max(), trace::kMaxObjectBytes + 1}) {
    TraceBuilder b = wide();
    b.alloc(0, 10, 1, 0x10000, size);
    b.end();
    const std::string e = load_error(b.take());
    CAPTURE(e);
    CHECK(e.find("alloc at 0x10000 has size " + std::to_string(size)) != std::string::npos);
    CHECK(e.find("byte limit") != std::string::npos);
  }
}

TEST_CASE("trace bounds: the largest objects and totals analyze exactly", "[trace][analysis]") {
  TraceBuilder b = wide();
  const std::uint64_t m = trace::kMaxObjectBytes;
  for (std::uint64_t i = 0; i < 4; ++i) b.alloc(0, 10, 1, 0x10000 + i * m, m);
  b.gc({}, {0x10000});
  b.end();
  auto r = analyze(b.take());
  REQUIRE(r.ok());
  const LiveSeriesView live = live_series(*r, GroupBy::kSite);
  REQUIRE(live.series.size() == 1);
  CHECK(live.series[0].allocated_bytes == 4 * m);
  REQUIRE_FALSE(live.series[0].live_bytes.empty());
  for (std::uint64_t v : live.series[0].live_bytes) CHECK(v <= 4 * m);
  CHECK(live.series[0].live_bytes.back() == 3 * m);  // one of the four died in GC 0
  const CohortView cohorts = cohort_view(*r);
  std::uint64_t total = 0;
  for (const Cohort& c : cohorts.cohorts) total += c.allocated_bytes;
  CHECK(total == 4 * m);
  auto report = build_report(*r, ReportOptions{});
  REQUIRE(report.ok());
  CHECK(render_text(*report).find("1.0 PiB") != std::string::npos);  // 4 x 2^48 bytes
}

TEST_CASE("trace bounds: allocs, moves and frees outside every declared space are refused", "[trace][regression]") {
  // The default space is [0x10000, 0x20000).
  {
    TraceBuilder b;
    b.alloc(0, 10, 1, 0x8000, 16);
    CHECK(load_error(b.take()).find("alloc address [0x8000, +16) is outside every declared space") != std::string::npos);
  }
  {
    TraceBuilder b;
    b.alloc(0, 10, 1, 0x1fff8, 16);  // starts inside, runs 8 bytes past the end
    CHECK(load_error(b.take()).find("alloc address [0x1fff8, +16) is outside every declared space") != std::string::npos);
  }
  {
    TraceBuilder b;
    b.alloc(0, 10, 1, 0x1fff0, 16);  // ends exactly at the end of the space: fine
    b.gc({}, {0x20000});
    CHECK(load_error(b.take()).find("free address 0x20000 is outside every declared space") != std::string::npos);
  }
  {
    TraceBuilder b;
    b.alloc(0, 10, 1, 0x10000, 16);
    b.gc({}, {}, {{0x10000, 0x30000}});
    CHECK(load_error(b.take()).find("move to address 0x30000 is outside every declared space") != std::string::npos);
  }
  {
    TraceBuilder b;
    b.gc_begin();
    b.free_range(0x18000, 0x9000);
    CHECK(load_error(b.take()).find("free-range range [0x18000, +36864) is outside every declared space") != std::string::npos);
  }
  {
    TraceBuilder b;
    b.gc_begin();
    b.free_range(0x10000, ~std::uint64_t{0});
    CHECK(load_error(b.take()).find("free-range wraps around the address space") != std::string::npos);
  }
  {
    TraceBuilder b;
    b.gc_begin();
    b.move_range(0x10000, 0x18000, 0x9000);
    CHECK(load_error(b.take()).find("move-range to range [0x18000, +36864) is outside every declared space") != std::string::npos);
  }
  {
    TraceBuilder b({{0, 0x10000, 0x20000, "a"}, {1, 0x30000, 0x40000, "b"}});
    b.alloc(0, 10, 1, 0x30000, 16);  // the second space
    b.gc({}, {0x30000}, {{0x10000, 0x3fff0}});
    b.end();
    auto c = trace::load(b.take());
    REQUIRE(c.ok());
    CHECK(c->allocs.size() == 1);
  }
}

TEST_CASE("trace bounds: overlapping spaces, oversized types and totals, stale records from the future", "[trace]") {
  CHECK(load_error(TraceBuilder({{0, 0x10000, 0x20000, "a"}, {1, 0x1f000, 0x40000, "b"}}).take())
            .find("space 1 [0x1f000, 0x40000) overlaps space 0 [0x10000, 0x20000)") != std::string::npos);
  {
    TraceBuilder b;
    b.type(1, "Huge", trace::kMaxObjectBytes + 1);
    CHECK(load_error(b.take()).find("type 1 instance size 281474976710657 exceeds") != std::string::npos);
  }
  {
    // Sizes within the limit whose running sum passes 2^62.
    TraceBuilder b({{0, 0x10000, 0x10000 + (std::uint64_t{1} << 63), "huge"}});
    for (std::uint64_t i = 0; i <= 1u << 14; ++i) b.alloc(0, 10, 1, 0x10000 + i * trace::kMaxObjectBytes, trace::kMaxObjectBytes);
    CHECK(load_error(b.take()).find("takes bytes allocated past the") != std::string::npos);
  }
  {
    TraceBuilder b;
    b.stale(0x10000, 5);  // last access after the current epoch
    CHECK(load_error(b.take()).find("stale record for epoch 0 (last access 5) in epoch 0") != std::string::npos);
  }
}

}  // namespace test_trace_bounds
