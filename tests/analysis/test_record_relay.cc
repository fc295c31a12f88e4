// The record relay (src/analysis/record_relay.h) lets the reader and the analyzer's front run on
// two threads. A visitor must see through it exactly what it sees from the reader: the same
// calls, arguments and order, across batch boundaries, for every kind of record, and for
// traces that end early or fail validation (up to the failure). These tests log every call of
// a visitor as text, fed directly and through the relay, and compare the logs.
#include "same_analysis.h"
#include "trace_builder.h"

#include "../../src/analysis/record_relay.h"

#include <objprof/analysis/analyzer.h>
#include <objprof/trace_reader.h>

#include <catch2/catch.hpp>

#include <fmt/core.h>

#include <random>
#include <string>
#include <vector>

namespace test_record_relay {

using namespace objprof;
using objprof::analysis::internal::RecordBatch;
using objprof::analysis::internal::Recorder;
using objprof::test::require_same;
using objprof::test::TraceBuilder;

namespace {

// Every call, with every argument, as one line.
class Log final : public trace::Visitor {
 public:
  std::vector<std::string> lines;
  void header(const trace::Header& h) override {
    std::string s = fmt::format("header {}", h.granule_bytes);
    for (const auto& sp : h.spaces) s += fmt::format(" [{} {:#x} {:#x} {}]", sp.id, sp.begin, sp.end, sp.name);
    lines.push_back(s);
  }
  void type_def(const trace::TypeDef& t) override { lines.push_back(fmt::format("type {} {} {} {}", t.id, t.instance_size, t.is_array, t.name)); }
  void site_def(const trace::SiteDef& s) override {
    lines.push_back(fmt::format("site {} {} {} {}", s.id, s.pc, s.bytecode_offset, s.method));
  }
  void thread_def(const trace::ThreadDef& t) override { lines.push_back(fmt::format("thread {} {}", t.id, t.name)); }
  void thread_end(std::uint32_t t) override { lines.push_back(fmt::format("thread-end {}", t)); }
  void alloc(const trace::AllocEvent& a) override {
    lines.push_back(fmt::format("alloc {} {} {} {:#x} {} {} {}", a.thread, a.site, a.type, a.addr, a.size, a.epoch, a.bytes_clock));
  }
  void move(const trace::MoveEvent& m) override {
    lines.push_back(fmt::format("move {:#x} {:#x} {} {} {}", m.from, m.to, m.bytes, m.epoch, m.range));
  }
  void free(const trace::FreeEvent& f) override { lines.push_back(fmt::format("free {:#x} {} {} {}", f.addr, f.epoch, f.bytes, f.range)); }
  void resize(const trace::ResizeEvent& r) override { lines.push_back(fmt::format("resize {} {:#x} {} {}", r.thread, r.addr, r.bytes, r.epoch)); }
  void gc_begin(const trace::GcEvent& g) override {
    lines.push_back(fmt::format("gc-begin {} {} {}", g.epoch, static_cast<int>(g.kind), g.bytes_allocated));
  }
  void gc_end(const trace::GcEvent& g) override {
    lines.push_back(fmt::format("gc-end {} {} {}", g.epoch, static_cast<int>(g.kind), g.bytes_allocated));
  }
  void bitmap_words(std::uint32_t space, std::uint64_t epoch, std::span<const std::pair<std::uint64_t, std::uint64_t>> words) override {
    std::string s = fmt::format("bits {} {}", space, epoch);
    for (auto [i, w] : words) s += fmt::format(" {}:{:x}", i, w);
    lines.push_back(s);
  }
  void stale(const trace::StaleEvent& s) override { lines.push_back(fmt::format("stale {:#x} {} {}", s.addr, s.last_access_epoch, s.epoch)); }
  void path(const trace::PathEvent& p) override {
    std::string s = fmt::format("path {} {} {} {:#x} {} {} {} {} {} {}", p.epoch, p.site, p.type, p.target, static_cast<int>(p.status),
                                p.objects_visited, static_cast<int>(p.path.root_kind), p.path.root_name, p.path.cut_steps, p.path.steps.size());
    for (const auto& st : p.path.steps) s += fmt::format(" [{:#x} {} {}]", st.addr, st.type_id, st.via);
    lines.push_back(s);
  }
  void end(std::uint64_t epoch, std::uint64_t bytes) override { lines.push_back(fmt::format("end {} {}", epoch, bytes)); }
  void chunk_end(std::uint64_t bytes) override { lines.push_back(fmt::format("chunk {}", bytes)); }
};

// A trace with every kind of record, `rounds` GCs of `allocs` allocations each.
std::vector<std::byte> every_record(std::uint64_t seed, int rounds, int allocs) {
  std::mt19937_64 rng(seed);
  TraceBuilder b({{0, 0x10000, 0x10000 + (8 << 20), "young"}, {3, 0x4000000, 0x4000000 + (8 << 20), "old"}});
  b.type(1, "Node", 32);
  b.type(2, "Node[]", 0, true);
  b.site(7, "List.add", 12, 0x401000);
  b.thread(0, "main");
  b.thread(1, "worker");
  std::uint64_t bump = 0x10000, old = 0x4000000;
  std::vector<std::uint64_t> live;
  for (int r = 0; r < rounds; ++r) {
    for (int i = 0; i < allocs; ++i) {
      const std::uint64_t size = 16 + 8 * (rng() % 8);
      b.alloc(static_cast<std::uint32_t>(rng() % 2), 7, 1 + static_cast<std::uint32_t>(rng() % 2), bump, size);
      live.push_back(bump);
      if (rng() % 50 == 0) b.resize(0, bump, size + 100);
      bump += size;
    }
    b.gc_begin(r % 2 ? trace::GcKind::kMinor : trace::GcKind::kFull);
    std::vector<std::uint64_t> bits;
    for (std::uint64_t a : live)
      if (rng() % 3 == 0) bits.push_back(a);
    b.bitmap(bits);
    b.move(live.front(), old);
    b.move_range(live[1], old + 64, 48);
    b.free(live.back());
    b.free_range(live[live.size() / 2], 64);
    b.stale(old, 0);
    b.path_found(7, 1, 0, "static root", {{old + 64, 1, ""}, {old, 1, "next"}});
    b.gc_end();
    live.clear();
    old += 4096;
  }
  b.thread_end(1);
  b.end();
  return b.take();
}

// The log of `data` read through a Recorder whose full batches are replayed at once (a batch
// boundary falls wherever kRecords does), and the read's result.
std::pair<std::vector<std::string>, Result<trace::ReadSummary>> relayed(std::span<const std::byte> data, std::size_t* batches) {
  Log log;
  RecordBatch batch;
  *batches = 0;
  Recorder rec(&batch, [&](RecordBatch* b) {
    analysis::internal::replay(*b, log);
    ++*batches;
    b->clear();
    return b;
  });
  Result<trace::ReadSummary> r = trace::read(data, rec);
  rec.finish();
  return {std::move(log.lines), std::move(r)};
}

}  // namespace

TEST_CASE("record relay: a visitor sees through it exactly what the reader gives", "[relay]") {
  const std::vector<std::byte> data = every_record(7, 6, 3000);  // > 2 batches of records
  Log direct;
  auto r = trace::read(data, direct);
  REQUIRE(r.ok());
  std::size_t batches = 0;
  auto [lines, rr] = relayed(data, &batches);
  REQUIRE(rr.ok());
  CHECK(batches >= 3);
  CHECK(rr->records == r->records);
  REQUIRE(lines.size() == direct.lines.size());
  for (std::size_t i = 0; i < lines.size(); ++i) {
    INFO("call " << i);
    REQUIRE(lines[i] == direct.lines[i]);
  }
  // Every kind of record is in it.
  for (const char* kind : {"header", "type", "site", "thread", "thread-end", "alloc", "move", "free", "resize", "gc-begin", "gc-end",
                           "bits", "stale", "path", "end", "chunk"}) {
    INFO(kind);
    CHECK(std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.rfind(std::string(kind) + " ", 0) == 0; }));
  }
}

TEST_CASE("record relay: a truncated or corrupt trace gives the same calls up to where the reader stops", "[relay]") {
  const std::vector<std::byte> data = every_record(11, 3, 400);
  for (std::size_t cut : {data.size() - 5, data.size() / 2, data.size() / 3 + 17}) {
    INFO("cut at " << cut);
    const std::span<const std::byte> part(data.data(), cut);
    Log direct;
    auto r = trace::read(part, direct);
    std::size_t batches = 0;
    auto [lines, rr] = relayed(part, &batches);
    REQUIRE(r.ok() == rr.ok());
    CHECK(r->truncated);
    CHECK(rr->truncated);
    CHECK(lines == direct.lines);
  }
  std::vector<std::byte> bad = data;
  bad[bad.size() / 2] ^= std::byte{0x40};  // a CRC mismatch in the middle
  Log direct;
  auto r = trace::read(bad, direct);
  std::size_t batches = 0;
  auto [lines, rr] = relayed(bad, &batches);
  REQUIRE_FALSE(r.ok());
  REQUIRE_FALSE(rr.ok());
  CHECK(rr.error().message == r.error().message);
  CHECK(lines == direct.lines);
  CHECK(!lines.empty());
}

TEST_CASE("record relay: analyses with the reader on its own thread match one worker's", "[relay][workers]") {
  const std::vector<std::byte> data = every_record(3, 8, 2500);
  analysis::AnalyzerOptions one;
  one.workers = 1;
  auto a = analysis::analyze(data, one);
  REQUIRE(a.ok());
  for (unsigned w : {3u, 4u, 6u}) {
    INFO(w << " workers");
    analysis::AnalyzerOptions many;
    many.workers = w;
    auto b = analysis::analyze(data, many);
    REQUIRE(b.ok());
    require_same(*a, *b);
    CHECK(b->paths.size() == a->paths.size());
    CHECK(b->stats.records == a->stats.records);
    CHECK(b->stats.path_records == a->stats.path_records);
  }
}

}  // namespace test_record_relay
