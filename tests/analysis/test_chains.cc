// Address-Chains from hand-made traces with known answers: moves then death, address reuse
// (in a later epoch, and in the same epoch by a concurrent GC), access bits in the epoch of a
// move (pre-GC addresses) including a compaction that moves one object onto another's old
// address, range moves, deaths inferred from reuse, a thread that ends early, truncated and
// corrupt traces.
#include "trace_builder.h"

#include <objprof/analysis/analyzer.h>
#include <objprof/analysis/object_metrics.h>

#include <catch2/catch.hpp>

#include <cstring>

namespace test_chains {

using namespace objprof;
using namespace objprof::analysis;
using objprof::test::TraceBuilder;

namespace {

constexpr std::uint64_t X = 0x10000, Y = 0x10100, Z = 0x10200, W = 0x10300;

TraceBuilder basic() {
  TraceBuilder b;
  b.type(1, "Node", 32);
  b.site(10, "Main.run", 4);
  b.thread(0, "main");
  return b;
}

TraceAnalysis analyze_ok(std::vector<std::byte> data, AnalyzerOptions opt = {}) {
  auto r = analyze(data, opt);
  if (!r.ok()) FAIL(r.error().message);
  return std::move(*r);
}

std::vector<Placement> places(std::initializer_list<std::pair<std::uint32_t, std::uint64_t>> l) {
  std::vector<Placement> out;
  for (auto [e, a] : l) out.push_back({e, a});
  return out;
}

}  // namespace

TEST_CASE("chain: allocation, access, move, then death", "[analysis]") {
  TraceBuilder b = basic();
  b.alloc(0, 10, 1, X, 32);
  b.gc({X}, {}, {{X, Y}});  // epoch 0: accessed at X, then moved to Y
  b.gc({Y}, {Y});           // epoch 1: accessed at Y, then freed
  b.gc({});
  b.end();
  const TraceAnalysis a = analyze_ok(b.take());
  REQUIRE(a.objects.size() == 1);
  const Chain c = a.objects.chain(0);
  CHECK(c.placements == places({{0, X}, {0, Y}}));
  CHECK(c.death_epoch == 1);
  CHECK(c.accessed == std::vector<EpochRun>{{0, 1}});
  CHECK(a.site_of(0).method == "Main.run");
  CHECK(a.type_of(0).name == "Node");
  CHECK(a.thread_of(0).name == "main");
  const ObjectMetrics m = object_metrics(a, 0);
  CHECK_FALSE(m.alive);
  CHECK(m.lifetime_gcs == 1);
  CHECK(m.idle_epochs == 0);
  CHECK(a.end_epoch == 3);
  CHECK(a.live_objects == 0);
  CHECK(a.gcs[0].moved_objects == 1);
  CHECK(a.gcs[1].freed_objects == 1);
  CHECK(a.stats.resolved_bits == 2);
  CHECK(a.stats.unresolved_bits == 0);
  CHECK(a.objects.addr_in_epoch(0, 0) == X);
  CHECK(a.objects.addr_in_epoch(0, 1) == Y);
}

TEST_CASE("chain: an address reused in a later epoch belongs to the new object", "[analysis]") {
  TraceBuilder b = basic();
  b.alloc(0, 10, 1, X, 32);  // A
  b.gc({X}, {X});            // A accessed in 0, dies in GC 0
  b.gc({});                  // epoch 1: nothing at X
  b.alloc(0, 10, 1, X, 32);  // B, epoch 2, same address
  b.gc({X});                 // epoch 2: the bit at X is B's
  b.gc({});
  b.end();
  const TraceAnalysis a = analyze_ok(b.take());
  REQUIRE(a.objects.size() == 2);
  CHECK(a.objects.death_epoch(0) == 0);
  CHECK(a.objects.accessed(0) == std::vector<EpochRun>{{0, 0}});
  CHECK(a.objects.alive(1));
  CHECK(a.objects.birth_epoch(1) == 2);
  CHECK(a.objects.accessed(1) == std::vector<EpochRun>{{2, 2}});
  CHECK(a.stats.inferred_deaths == 0);
  CHECK(object_metrics(a, 1).idle_epochs == 1);  // judged at epoch 3 (the last with bits)
}

TEST_CASE("chain: an address reused in the same epoch by a concurrent GC", "[analysis]") {
  // A concurrent collector frees A at X while a mutator already allocates B there. B's
  // allocation reaches the file before A's free (thread chunks are flushed when full, the
  // collector's at gc-end); the GC must still free A, not B, and the epoch's bit at X is A's.
  for (bool free_first : {false, true}) {
    TraceBuilder b = basic();
    b.alloc(0, 10, 1, X, 32);  // A
    b.gc_begin(trace::GcKind::kConcurrent);
    b.bitmap({X});  // epoch 0 accesses: A
    if (free_first) b.free(X);
    b.alloc(0, 10, 1, X, 32);  // B, born during GC 0
    if (!free_first) b.free(X);
    b.gc_end();
    b.gc({X});  // epoch 1: B
    b.end();
    const TraceAnalysis a = analyze_ok(b.take());
    INFO("free first: " << free_first);
    REQUIRE(a.objects.size() == 2);
    CHECK(a.objects.death_epoch(0) == 0);
    CHECK(a.objects.accessed(0) == std::vector<EpochRun>{{0, 0}});
    CHECK((a.objects.flags(0) & kDeathInferred) == 0);
    CHECK(a.objects.alive(1));
    CHECK((a.objects.flags(1) & kBornDuringGc) != 0);
    CHECK(a.objects.birth_epoch(1) == 0);
    CHECK(a.objects.accessed(1) == std::vector<EpochRun>{{1, 1}});
    CHECK(a.stats.allocs_during_gc == 1);
    CHECK(a.stats.unknown_frees == 0);
    CHECK(a.stats.inferred_deaths == 0);
  }
}

TEST_CASE("chain: access bits of the epoch of a move are read at pre-GC addresses", "[analysis]") {
  // Sliding compaction: A at Y dies, B moves Z -> Y and C moves W -> Z in the same GC. The bits
  // of that epoch at Y and Z are A's and B's; in the next epoch the same addresses are B's and C's.
  TraceBuilder b = basic();
  b.alloc(0, 10, 1, Y, 32);  // A
  b.alloc(0, 10, 1, Z, 32);  // B
  b.alloc(0, 10, 1, W, 32);  // C
  b.gc_begin(trace::GcKind::kCompacting);
  b.bitmap({Y, Z});
  b.move(Z, Y);  // B onto A's address, written before A's free
  b.move(W, Z);
  b.free(Y);
  b.gc_end();
  b.gc({Y, Z});
  b.end();
  const TraceAnalysis a = analyze_ok(b.take());
  REQUIRE(a.objects.size() == 3);
  CHECK(a.objects.accessed(0) == std::vector<EpochRun>{{0, 0}});  // A, then freed
  CHECK(a.objects.death_epoch(0) == 0);
  CHECK(a.objects.accessed(1) == std::vector<EpochRun>{{0, 1}});  // B at Z, then at Y
  CHECK(a.objects.placements(1) == places({{0, Z}, {0, Y}}));
  CHECK(a.objects.accessed(2) == std::vector<EpochRun>{{1, 1}});  // C at Z from epoch 1
  CHECK(a.objects.placements(2) == places({{0, W}, {0, Z}}));
  CHECK(a.stats.inferred_deaths == 0);
  CHECK(a.stats.unresolved_bits == 0);
}

TEST_CASE("chain: accessed epochs with gaps are kept exactly", "[analysis]") {
  TraceBuilder b = basic();
  b.alloc(0, 10, 1, X, 32);
  const std::vector<int> pattern{1, 1, 0, 1, 0, 0, 1, 1, 1, 0};
  for (int hit : pattern) b.gc(hit ? std::vector<std::uint64_t>{X} : std::vector<std::uint64_t>{});
  b.end();
  const TraceAnalysis a = analyze_ok(b.take());
  CHECK(a.objects.accessed(0) == std::vector<EpochRun>{{0, 1}, {3, 3}, {6, 8}});
  CHECK(a.objects.access_count(0) == 6);
  CHECK(a.objects.first_access(0) == 0);
  CHECK(a.objects.last_access(0) == 8);
  CHECK(object_metrics(a, 0).idle_epochs == 1);
}

TEST_CASE("chain: a range move carries every object in the range", "[analysis]") {
  TraceBuilder b = basic();
  for (int i = 0; i < 4; ++i) b.alloc(0, 10, 1, X + 32 * static_cast<std::uint64_t>(i), 32);
  b.alloc(0, 10, 1, X + 0x800, 32);  // outside the range
  b.gc_begin(trace::GcKind::kCompacting);
  b.bitmap({X + 32});
  b.move_range(X, X + 0x1000, 128);
  b.gc_end();
  b.gc({X + 0x1000 + 32});
  b.end();
  const TraceAnalysis a = analyze_ok(b.take());
  for (ObjectId o = 0; o < 4; ++o) {
    CHECK(a.objects.placements(o) == places({{0, X + 32 * o}, {0, X + 0x1000 + 32 * o}}));
  }
  CHECK_FALSE(a.objects.moved(4));
  CHECK(a.objects.accessed(1) == std::vector<EpochRun>{{0, 1}});
  CHECK(a.stats.move_ranges == 1);
  CHECK(a.gcs[0].moved_objects == 4);
}

TEST_CASE("chain: a free range kills every object that starts in it, and only those", "[analysis]") {
  TraceBuilder b = basic();
  for (int i = 0; i < 4; ++i) b.alloc(0, 10, 1, X + 32 * static_cast<std::uint64_t>(i), 32);
  b.alloc(0, 10, 1, X + 0x800, 32);  // after the range: survives
  b.gc_begin();
  b.bitmap({X + 32});
  b.free_range(X + 32, 96);  // objects 1..3; object 0 starts before it
  b.move(X, X + 32);         // onto memory the range freed, in the same GC
  b.gc_end();
  b.gc({X + 32});
  b.end();
  const TraceAnalysis a = analyze_ok(b.take());
  for (ObjectId o = 1; o < 4; ++o) CHECK(a.objects.death_epoch(o) == 0);
  CHECK(a.objects.alive(0));
  CHECK(a.objects.placements(0) == places({{0, X}, {0, X + 32}}));
  CHECK(a.objects.accessed(0) == std::vector<EpochRun>{{1, 1}});
  CHECK(a.objects.accessed(1) == std::vector<EpochRun>{{0, 0}});  // the bit of epoch 0 was its
  CHECK(a.objects.alive(4));
  CHECK(a.stats.free_ranges == 1);
  CHECK(a.stats.range_freed == 3);
  CHECK(a.stats.unknown_frees == 0);
  CHECK(a.gcs[0].freed_objects == 3);
  CHECK(a.gcs[0].freed_bytes == 96);
  CHECK(a.live_objects == 2);
  // The same trace in an older version is refused, not misread.
  std::vector<std::byte> bytes = [&] {
    TraceBuilder c = basic();
    c.write_unpacked();  // version 4's records, but for the free range
    c.alloc(0, 10, 1, X, 32);
    c.gc_begin();
    c.free_range(X, 32);
    c.gc_end();
    c.end();
    return c.take();
  }();
  const std::uint32_t v3 = 3;
  std::memcpy(bytes.data() + 8, &v3, 4);  // the preamble's version (not covered by chunk CRCs)
  auto old = analyze(bytes);
  REQUIRE_FALSE(old.ok());
  CHECK(old.error().message.find("free-range record in a version 3 trace") != std::string::npos);
}

TEST_CASE("chain: a death without a free record is inferred from address reuse", "[analysis]") {
  // A runtime that leaves deaths implicit (the paper's semi-space: "objects except moved ones are
  // dead"): the next object at the same address proves the previous one died.
  TraceBuilder b = basic();
  b.alloc(0, 10, 1, X, 32);
  b.gc({});
  b.gc({});
  b.alloc(0, 10, 1, X, 32);
  b.gc({});
  b.end();
  const TraceAnalysis a = analyze_ok(b.take());
  CHECK(a.objects.death_epoch(0) == 1);  // the last GC before the reuse
  CHECK((a.objects.flags(0) & kDeathInferred) != 0);
  CHECK(a.stats.inferred_deaths == 1);
  CHECK(a.live_objects == 1);
  REQUIRE_FALSE(a.warnings.empty());
  CHECK(a.warnings.back().find("inferred") != std::string::npos);
}

TEST_CASE("chain: a thread that ends early keeps its objects and its line", "[analysis]") {
  TraceBuilder b = basic();
  b.thread(2, "worker");
  b.alloc(2, 10, 1, X, 32);
  b.alloc(2, 10, 1, Y, 64);
  b.thread_end(2);
  b.alloc(0, 10, 1, Z, 16);
  b.gc({X}, {Z});
  b.gc({});
  b.gc({Y});
  b.end();
  const TraceAnalysis a = analyze_ok(b.take());
  const Thread& worker = a.threads[a.thread_index.at(2)];
  CHECK(worker.name == "worker");
  CHECK(worker.end_epoch == 0);
  CHECK(a.threads[a.thread_index.at(0)].end_epoch == kNoEpoch);
  CHECK(a.thread_of(0).id == 2);
  CHECK(a.thread_of(2).id == 0);
  CHECK(a.objects.alive(0));
  CHECK(a.objects.alive(1));
  CHECK(a.live_bytes == 96);
  CHECK(a.objects.accessed(1) == std::vector<EpochRun>{{2, 2}});
}

TEST_CASE("chain: online stale records mark their (post-GC) objects", "[analysis]") {
  TraceBuilder b = basic();
  b.alloc(0, 10, 1, X, 32);
  b.gc_begin();
  b.move(X, Y);
  b.stale(Y, 0);  // written after the moves, at the new address
  b.gc_end();
  b.end();
  const TraceAnalysis a = analyze_ok(b.take());
  CHECK((a.objects.flags(0) & kReportedStale) != 0);
  CHECK(a.stats.stale_records == 1);
}

TEST_CASE("analyzer: frees, moves and bits that name no object are counted, never fatal", "[analysis]") {
  TraceBuilder b = basic();
  b.alloc(0, 10, 1, X, 32);
  b.gc({Y, X}, {W}, {{Z, W}});
  b.end();
  const TraceAnalysis a = analyze_ok(b.take());
  CHECK(a.stats.unresolved_bits == 1);
  CHECK(a.stats.unknown_frees == 1);
  CHECK(a.stats.unknown_moves == 1);
  CHECK(a.objects.accessed(0) == std::vector<EpochRun>{{0, 0}});
}

TEST_CASE("analyzer: parallel and sequential bitmap resolution agree", "[analysis]") {
  TraceBuilder b = basic();
  const int n = 3000;
  for (int i = 0; i < n; ++i) b.alloc(0, 10, 1, 0x10000 + 16 * static_cast<std::uint64_t>(i), 16);
  for (int e = 0; e < 6; ++e) {
    std::vector<std::uint64_t> bits;
    for (int i = 0; i < n; ++i)
      if ((i * 7 + e * 3) % 5 < 2 || i % 11 == e) bits.push_back(0x10000 + 16 * static_cast<std::uint64_t>(i));
    bits.push_back(0x10000 + 16 * n + 8);  // no object there
    b.gc(bits);
  }
  b.end();
  const std::vector<std::byte> data = b.take();
  AnalyzerOptions seq, par;
  seq.parallel_bitmap_words = SIZE_MAX;
  par.parallel_bitmap_words = 1;
  // The incremental Analyzer: the one place the option applies (analyze() shards instead).
  const auto incremental = [&](const AnalyzerOptions& o) {
    Analyzer an(o);
    auto sum = trace::read(data, an.visitor());
    REQUIRE(sum.ok());
    auto r = an.take(*sum);
    REQUIRE(r.ok());
    return std::move(*r);
  };
  const TraceAnalysis s = incremental(seq), p = incremental(par);
  REQUIRE(s.objects.size() == p.objects.size());
  for (ObjectId o = 0; o < s.objects.size(); ++o) REQUIRE(s.objects.accessed(o) == p.objects.accessed(o));
  CHECK(s.stats.resolved_bits == p.stats.resolved_bits);
  CHECK(s.stats.unresolved_bits == 6);
  CHECK(p.stats.unresolved_bits == 6);
}

TEST_CASE("analyzer: a truncated trace is analyzed up to its last whole chunk, with a warning", "[analysis]") {
  TraceBuilder b = basic();
  for (int i = 0; i < 10; ++i) b.alloc(0, 10, 1, X + 32 * static_cast<std::uint64_t>(i), 32);
  b.gc({X});
  for (int i = 0; i < 5; ++i) b.alloc(0, 10, 1, Z + 32 * static_cast<std::uint64_t>(i), 32);
  b.end();
  std::vector<std::byte> data = b.take();
  // Cut inside the chunk of the end record and one alloc before it: 5 + 10 objects... minus the
  // last alloc chunk, whose end we cut into.
  std::vector<std::size_t> chunk_starts;
  for (std::size_t at = trace::kPreambleBytes; at < data.size();) {
    chunk_starts.push_back(at);
    std::uint32_t payload = 0;
    std::memcpy(&payload, data.data() + at + 4, 4);
    at += trace::kChunkHeaderBytes + payload;
  }
  REQUIRE(chunk_starts.size() >= 2);
  data.resize(chunk_starts[chunk_starts.size() - 2] + 10);  // 10 bytes into the last alloc's chunk
  auto r = analyze(data);
  REQUIRE(r.ok());
  CHECK(r->truncated);
  CHECK_FALSE(r->complete);
  CHECK(r->objects.size() == 14);
  REQUIRE_FALSE(r->warnings.empty());
  CHECK(r->warnings.front().find("last whole chunk") != std::string::npos);
  CHECK(r->end_epoch == 1);
  CHECK(r->objects.accessed(0) == std::vector<EpochRun>{{0, 0}});
}

TEST_CASE("analyzer: a corrupt trace gives the reader's error", "[analysis]") {
  TraceBuilder b = basic();
  b.alloc(0, 10, 1, X, 32);
  b.gc({X});
  b.end();
  std::vector<std::byte> data = b.take();
  data[data.size() - 3] ^= std::byte{0x40};  // inside the end record, the last chunk's payload
  auto r = analyze(data);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ErrorCode::kCorrupt);
  CHECK(r.error().message.find("CRC32C mismatch") != std::string::npos);

  auto missing = analyze_file("/nonexistent/objprof.trace");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().code == ErrorCode::kIo);
  CHECK(missing.error().message.find("cannot open") != std::string::npos);
}

}  // namespace test_chains
