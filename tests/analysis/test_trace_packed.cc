// Packed hot records (trace version 5): alloc, move, free and resize as varints with addresses
// as deltas inside a chunk. Random records of every kind round-trip through chunks small enough
// that deltas restart often; a nearby small object costs the bytes the format promises; the
// fixed records of older versions still read, to the same analysis; malformed packed records
// are refused with what is wrong; and every record is refused in versions before its own.
#include "trace_builder.h"
#include "../test_env.h"

#include <objprof/analysis/analyzer.h>
#include <objprof/trace_reader.h>

#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <tuple>
#include <vector>

using namespace objprof;
using objprof::test::TraceBuilder;

namespace test_trace_packed {

constexpr std::uint64_t kLo = 0x1000, kHi = std::uint64_t{1} << 47;

std::string load_error(const std::vector<std::byte>& data) {
  auto r = trace::load(data);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ErrorCode::kCorrupt);
  return r.error().message;
}

void set_version(std::vector<std::byte>& t, std::uint32_t v) {
  std::memcpy(t.data() + 8, &v, 4);  // the preamble's version (not covered by chunk CRCs)
}

// Addresses of every shape a delta can take: near the previous one (both ways), far, not a
// multiple of 8, and the space's edges.
struct AddressSource {
  std::mt19937_64 rng;
  std::uint64_t prev = kLo;
  std::uint64_t next() {
    std::uint64_t a = kLo;
    switch (rng() % 6) {
      case 0: a = prev + 8 * (rng() % 64); break;
      case 1: a = prev - std::min<std::uint64_t>(prev - kLo, 8 * (rng() % 4096)); break;
      case 2: a = kLo + ((rng() % (kHi - kLo)) & ~std::uint64_t{7}); break;
      case 3: a = kLo + rng() % (kHi - kLo); break;
      case 4: a = kHi - 1 - rng() % 3; break;
      default: a = kLo + rng() % 3; break;
    }
    if (a < kLo || a >= kHi) a = kLo;
    prev = a;
    return a;
  }
};

using AllocKey = std::tuple<std::uint32_t, std::uint32_t, std::uint64_t, std::uint64_t>;

}  // namespace test_trace_packed

using namespace test_trace_packed;

TEST_CASE("packed records: every field round-trips, across many chunk boundaries", "[trace][packed]") {
  // 256-byte chunks: deltas restart at every chunk, and some records straddle where one ends.
  TraceBuilder b({{0, kLo, kHi, "heap"}}, 8, 256);
  b.thread(0, "main");
  EventBuffer& mutator = b.thread_stream(0);
  EventBuffer& collector = b.collector_stream();
  AddressSource addrs{std::mt19937_64{20261125}};
  std::mt19937_64 rng(7);
  std::vector<AllocKey> allocs;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> resizes, moves;
  std::vector<std::uint64_t> frees;
  // Ids on every varint length boundary (1, 2, 3 bytes and the loop beyond), and random ones.
  constexpr std::uint32_t kEdges[] = {0, 0x7F, 0x80, 0x3FFF, 0x4000, 0x1F'FFFF, 0x20'0000, 0xFFF'FFFF, 0x1000'0000};
  const auto field32 = [&] {
    switch (rng() % 4) {
      case 0: return static_cast<std::uint32_t>(rng() % 128);
      case 1: return static_cast<std::uint32_t>(rng());
      case 2: return kEdges[rng() % std::size(kEdges)];
      default: return 0xFFFF'FFFFu;
    }
  };
  for (int i = 0; i < 6000; ++i) {
    switch (rng() % 4) {
      case 0: {
        const std::uint64_t addr = addrs.next();
        const std::uint64_t room = std::min(kHi - addr, trace::kMaxObjectBytes);
        const std::uint64_t size = rng() % 2 ? rng() % std::min<std::uint64_t>(room, 200) : rng() % (room + 1);
        const std::uint32_t site = field32(), type = field32();
        mutator.alloc(site, type, addr, size);
        allocs.emplace_back(site, type, addr, size);
        break;
      }
      case 1: {
        // Half of them right after the alloc of their object (an alloc-resized record).
        const bool fold = !allocs.empty() && rng() % 2;
        const std::uint64_t addr = fold ? std::get<2>(allocs.back()) : addrs.next();
        const std::uint64_t bytes = rng() % (trace::kMaxObjectBytes + 1);
        if (fold) {
          const auto [site, type, at, size] = allocs.back();  // a copy: the vector grows below
          allocs.emplace_back(site, type, at, size);
          mutator.alloc(site, type, at, size);
        }
        mutator.resize(addr, bytes);
        resizes.emplace_back(addr, bytes);
        break;
      }
      case 2: {
        const std::uint64_t addr = addrs.next();
        collector.free(addr);
        frees.push_back(addr);
        break;
      }
      default: {
        const std::uint64_t from = addrs.next(), to = addrs.next();
        collector.move(from, to);
        moves.emplace_back(from, to);
        break;
      }
    }
  }
  mutator.flush();
  collector.flush();
  b.end();
  const std::vector<std::byte> data = b.take();
  auto c = trace::load(data);
  REQUIRE(c.ok());
  CHECK(c->summary.chunks > 200);
  REQUIRE(c->allocs.size() == allocs.size());
  for (std::size_t i = 0; i < allocs.size(); ++i) {
    const auto& a = c->allocs[i];
    REQUIRE(AllocKey{a.site, a.type, a.addr, a.size} == allocs[i]);
    CHECK(a.thread == 0);
  }
  REQUIRE(c->resizes.size() == resizes.size());
  for (std::size_t i = 0; i < resizes.size(); ++i)
    REQUIRE(std::pair{c->resizes[i].addr, c->resizes[i].bytes} == resizes[i]);
  REQUIRE(c->frees.size() == frees.size());
  for (std::size_t i = 0; i < frees.size(); ++i) {
    REQUIRE(c->frees[i].addr == frees[i]);
    CHECK_FALSE(c->frees[i].range);
  }
  REQUIRE(c->moves.size() == moves.size());
  for (std::size_t i = 0; i < moves.size(); ++i) {
    REQUIRE(std::pair{c->moves[i].from, c->moves[i].to} == moves[i]);
    CHECK_FALSE(c->moves[i].range);
  }
}

TEST_CASE("packed records: a nearby small object's records take a few bytes", "[trace][packed]") {
  auto writer = TraceWriter::create(std::make_unique<MemorySink>());
  REQUIRE(writer.ok());
  auto buf = (*writer)->make_buffer(trace::kThreadStreamBase);
  const auto bytes_of = [&](auto&& write) {
    const std::size_t before = buf->pending_bytes();
    write();
    return buf->pending_bytes() - before;
  };
  const std::uint64_t a = 0x7f00'1234'5670;
  // The chunk's first address is absolute: its delta from 0 takes 7 bytes.
  CHECK(bytes_of([&] { buf->alloc(3, 2, a, 56); }) == 1 + 1 + 1 + 7 + 1);
  CHECK(bytes_of([&] { buf->alloc(3, 2, a + 64, 56); }) == 5);           // tag, site, type, +64, size
  // A resize right after the alloc of its object extends the alloc record by the footprint.
  CHECK(bytes_of([&] { buf->resize(a + 64, 200); }) == 2);              // 200 takes 2
  CHECK(bytes_of([&] { buf->resize(a + 64, 300); }) == 1 + 1 + 2);      // not right after: a record
  CHECK(bytes_of([&] { buf->free(a); }) == 2);                          // -64
  CHECK(bytes_of([&] { buf->free(a + 3); }) == 1 + 1 + 8);              // not a multiple of 8: absolute
  CHECK(bytes_of([&] { buf->alloc(300, 70000, a + 3 + 8192, 1u << 20); }) == 1 + 2 + 3 + 2 + 3);  // +8192 from a + 3
  // A move's destination is a delta from the previous destination (a copying collector's are
  // consecutive), its source from the previous address; two deltas that fit i32 granules make
  // a granule move of fixed width (9 bytes), others a packed move.
  // (From a + 3 + 8192: not a multiple of 8, absolute; the chunk's first `to`: from 0.)
  CHECK(bytes_of([&] { buf->move(a + 1024, a + (1u << 30)); }) == 1 + 9 + 7);
  CHECK(bytes_of([&] { buf->move(a + 1024 + 128, a + (1u << 30) + 56); }) == 9);
  CHECK(bytes_of([&] { buf->move(a + 1024 + 132, a + (1u << 30) + 64); }) == 1 + 9 + 1);  // +4: not granules
  // After a flush the next chunk starts from 0 again.
  buf->flush();
  CHECK(bytes_of([&] { buf->free(a); }) == 1 + 7);
}

TEST_CASE("granule moves: deltas at the edges of 32 bits round-trip, one past them as packed moves", "[trace][packed]") {
  // Deltas (of `from` from the chunk's previous address, of `to` from its previous move's
  // destination) at and one granule past each end of the i32 range, in 8-byte units, and
  // unaligned ones; each move's record is as long as the form it must take.
  constexpr std::uint64_t kBase = std::uint64_t{1} << 40, kSpan = trace::kMoveGranuleSpan;
  TraceBuilder b({{0, kLo, kHi, "heap"}}, 8, 1 << 16);
  b.thread(0, "main");
  EventBuffer& collector = b.collector_stream();
  std::uint64_t prev_from = 0, prev_to = 0;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> moves;
  const auto move = [&](std::uint64_t from, std::uint64_t to) {
    const std::size_t before = collector.pending_bytes();
    collector.move(from, to);
    const std::uint64_t df = from - prev_from, dt = to - prev_to;
    const auto fits = [&](std::uint64_t d) {
      const auto s = static_cast<std::int64_t>(d);
      return d % 8 == 0 && s >= -static_cast<std::int64_t>(kSpan) && s < static_cast<std::int64_t>(kSpan);
    };
    INFO("from delta " << static_cast<std::int64_t>(df) << ", to delta " << static_cast<std::int64_t>(dt));
    std::size_t expected = trace::kMoveGranulesBytes;
    if (!(fits(df) && fits(dt))) {  // the packed form's length: its two addresses' deltas
      std::uint8_t packed[2 * trace::kMaxAddrBytes];
      std::uint8_t* end = EventBuffer::put_addr(packed, from, prev_from);
      expected = 1 + static_cast<std::size_t>(EventBuffer::put_addr(end, to, prev_to) - packed);
      CHECK(expected != trace::kMoveGranulesBytes);
    }
    CHECK(collector.pending_bytes() - before == expected);
    prev_from = from;
    prev_to = to;
    moves.emplace_back(from, to);
  };
  move(kBase, kBase + 8);  // from 0: packed (absolute-sized deltas)
  const std::int64_t edges[] = {0, 8, -8, static_cast<std::int64_t>(kSpan) - 8, -static_cast<std::int64_t>(kSpan),
                                static_cast<std::int64_t>(kSpan), -static_cast<std::int64_t>(kSpan) - 8, 4, -3};
  for (std::int64_t df : edges)
    for (std::int64_t dt : edges) {
      // Back near kBase first (a delta that fits), so every edge starts from the same place.
      move(kBase + 64, kBase + 72);
      move(kBase + 64 + static_cast<std::uint64_t>(df), kBase + 72 + static_cast<std::uint64_t>(dt));
    }
  collector.flush();
  b.end();
  auto c = trace::load(b.take());
  REQUIRE(c.ok());
  REQUIRE(c->moves.size() == moves.size());
  for (std::size_t i = 0; i < moves.size(); ++i) REQUIRE(std::pair{c->moves[i].from, c->moves[i].to} == moves[i]);
}

TEST_CASE("packed records: fixed (version 4) records read as the same trace and the same analysis", "[trace][packed]") {
  const auto script = [](bool packed) {
    TraceBuilder b;
    if (!packed) b.write_unpacked();
    b.type(1, "Node", 32);
    b.site(10, "Main.run", 4);
    b.thread(0, "main");
    for (std::uint64_t i = 0; i < 6; ++i) b.alloc(0, 10, 1, 0x10000 + 64 * i, 32);
    b.resize(0, 0x10040, 4096);
    b.gc_begin();
    b.bitmap({0x10000, 0x10040});
    b.free(0x10080);
    b.free(0x100c0);
    b.move(0x10000, 0x18000);
    b.gc_end();
    b.alloc(0, 10, 1, 0x10080, 32);
    b.gc({0x18000});
    b.end();
    return b.take();
  };
  const std::vector<std::byte> packed = script(true), fixed = script(false);
  CHECK(packed.size() < fixed.size());
  auto p = trace::load(packed);
  auto f = trace::load(fixed);
  REQUIRE(p.ok());
  REQUIRE(f.ok());
  REQUIRE(p->allocs.size() == f->allocs.size());
  for (std::size_t i = 0; i < p->allocs.size(); ++i) {
    const auto &x = p->allocs[i], &y = f->allocs[i];
    CHECK(std::tuple{x.thread, x.site, x.type, x.addr, x.size, x.epoch, x.bytes_clock} ==
          std::tuple{y.thread, y.site, y.type, y.addr, y.size, y.epoch, y.bytes_clock});
  }
  REQUIRE(p->frees.size() == 2);
  REQUIRE(f->frees.size() == 2);
  CHECK(p->frees[1].addr == f->frees[1].addr);
  REQUIRE(p->moves.size() == 1);
  REQUIRE(f->moves.size() == 1);
  CHECK(std::pair{p->moves[0].from, p->moves[0].to} == std::pair{f->moves[0].from, f->moves[0].to});
  REQUIRE(p->resizes.size() == 1);
  REQUIRE(f->resizes.size() == 1);
  CHECK(std::pair{p->resizes[0].addr, p->resizes[0].bytes} == std::pair{f->resizes[0].addr, f->resizes[0].bytes});

  auto ap = analysis::analyze(packed);
  auto af = analysis::analyze(fixed);
  REQUIRE(ap.ok());
  REQUIRE(af.ok());
  REQUIRE(ap->objects.size() == 7);
  REQUIRE(af->objects.size() == 7);
  CHECK(ap->live_objects == af->live_objects);
  CHECK(ap->total_bytes == af->total_bytes);
  for (analysis::ObjectId o = 0; o < 7; ++o) {
    CHECK(ap->objects.alive(o) == af->objects.alive(o));
    CHECK(ap->objects.accessed(o) == af->objects.accessed(o));
  }
}

TEST_CASE("packed records: refused in traces before version 5, and a resize in version 1", "[trace][packed]") {
  TraceBuilder b;
  b.thread(0, "main");
  b.alloc(0, 10, 1, 0x10000, 32);
  b.end();
  std::vector<std::byte> t = b.take();
  set_version(t, 4);
  CHECK(load_error(t).find("packed alloc record in a version 4 trace") != std::string::npos);

  TraceBuilder old;
  old.write_unpacked();
  old.thread(0, "main");
  old.alloc(0, 10, 1, 0x10000, 56);
  old.resize(0, 0x10000, 4096);
  old.end();
  std::vector<std::byte> v1 = old.take();
  REQUIRE(trace::load(v1).ok());
  set_version(v1, 1);
  CHECK(load_error(v1).find("resize record in a version 1 trace") != std::string::npos);
}

TEST_CASE("packed records: malformed ones are refused with what is wrong", "[trace][packed]") {
  // A trace of one thread and one record, in the thread's stream or the collector's.
  const auto trace_with = [](const std::vector<std::uint8_t>& record, bool collector) {
    TraceBuilder b;
    b.thread(0, "main");
    if (collector) b.raw_collector(record);
    else b.raw_thread(0, record);
    b.end();
    return b.take();
  };
  const auto error_of = [&](const std::vector<std::uint8_t>& record, bool collector) {
    return load_error(trace_with(record, collector));
  };
  constexpr std::uint8_t kAlloc = static_cast<std::uint8_t>(trace::Tag::kAllocPacked);
  constexpr std::uint8_t kFree = static_cast<std::uint8_t>(trace::Tag::kFreePacked);
  constexpr std::uint8_t kMove = static_cast<std::uint8_t>(trace::Tag::kMovePacked);
  constexpr std::uint8_t kResize = static_cast<std::uint8_t>(trace::Tag::kResizePacked);
  // 0x10000 as a packed address from 0: zigzag(0x2000) << 1 = 0x8000.
  const std::vector<std::uint8_t> addr_10000 = {0x80, 0x80, 0x02};
  const auto with = [](std::vector<std::uint8_t> v, const std::vector<std::uint8_t>& more) {
    v.insert(v.end(), more.begin(), more.end());
    return v;
  };
  {
    // The well-formed record these are broken from reads.
    auto c = trace::load(trace_with(with({kAlloc, 10, 1}, with(addr_10000, {32})), false));
    REQUIRE(c.ok());
    REQUIRE(c->allocs.size() == 1);
    CHECK(c->allocs[0].addr == 0x10000);
    CHECK(c->allocs[0].size == 32);
  }
  CHECK(error_of({kAlloc, 10, 1}, false).find("alloc address runs past the end of its chunk") != std::string::npos);
  CHECK(error_of(with({kAlloc, 10, 1}, addr_10000), false).find("alloc size runs past the end of its chunk") != std::string::npos);
  CHECK(error_of({kAlloc, 0x80, 0x80, 0x80, 0x80, 0x10, 1, 0x80, 0x80, 0x02, 32}, false)
            .find("alloc site 4294967296 does not fit 32 bits") != std::string::npos);
  // Ten bytes whose last carries more than bit 63; eleven bytes.
  CHECK(error_of(with({kResize}, {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02}), false)
            .find("resize address does not fit 64 bits") != std::string::npos);
  CHECK(error_of(with({kResize}, {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x81, 0x00}), false)
            .find("does not fit 64 bits") != std::string::npos);
  CHECK(error_of({kFree, 3}, true).find("odd delta code 3") != std::string::npos);
  CHECK(error_of({kFree, 1, 0, 0, 1}, true).find("free address needs 8 bytes") != std::string::npos);
  CHECK(error_of({kFree, 0x7E}, true).find("free address 0xffffffffffffff00 is outside every declared space") != std::string::npos);
  CHECK(error_of(with({kMove}, addr_10000), true).find("move to runs past the end of its chunk") != std::string::npos);
  // Granule moves: 0x10000 from 0 is 0x2000 granules; one cut short; one whose `to` lands
  // below the space (-8 from 0); one whose `from` leaves it (0x10000 + 0x10000 granules * 8).
  constexpr std::uint8_t kGranules = static_cast<std::uint8_t>(trace::Tag::kMoveGranules);
  {
    auto c = trace::load(trace_with({kGranules, 0x00, 0x20, 0, 0, 0x08, 0x20, 0, 0}, true));
    REQUIRE(c.ok());
    REQUIRE(c->moves.size() == 1);
    CHECK(c->moves[0].from == 0x10000);
    CHECK(c->moves[0].to == 0x10040);
  }
  CHECK(error_of({kGranules, 0x00, 0x20, 0, 0, 0x08, 0x20}, true).find("granule move to needs 4 bytes") != std::string::npos);
  CHECK(error_of({kGranules, 0x00, 0x20, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF}, true)
            .find("move to address 0xfffffffffffffff8 is outside every declared space") != std::string::npos);
  CHECK(error_of({kGranules, 0x00, 0x20, 0, 0, 0x08, 0x20, 0, 0, kGranules, 0x00, 0x20, 0, 0, 0, 0, 0, 0}, true)
            .find("move from address 0x20000 is outside every declared space") != std::string::npos);
  CHECK(error_of(with(with({kAlloc, 10, 1}, addr_10000), {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}), false)
            .find("above the 281474976710656 byte limit") != std::string::npos);
  CHECK(error_of(with(with({kAlloc, 10, 1}, addr_10000), {32}), true).find("alloc record in non-thread stream 1") != std::string::npos);
  constexpr std::uint8_t kAllocResized = static_cast<std::uint8_t>(trace::Tag::kAllocResized);
  CHECK(error_of(with(with({kAllocResized, 10, 1}, addr_10000), {32}), false)
            .find("alloc-resized footprint runs past the end of its chunk") != std::string::npos);
  CHECK(error_of(with(with({kAllocResized, 10, 1}, addr_10000), {32, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}), false)
            .find("resize at 0x10000 to 562949953421312 bytes, above the") != std::string::npos);
  {
    // Well formed, it is an alloc and a resize of the same object.
    auto c = trace::load(trace_with(with(with({kAllocResized, 10, 1}, addr_10000), {56, 0xC8, 0x01}), false));
    REQUIRE(c.ok());
    REQUIRE(c->allocs.size() == 1);
    REQUIRE(c->resizes.size() == 1);
    CHECK(c->allocs[0].size == 56);
    CHECK(c->resizes[0].addr == 0x10000);
    CHECK(c->resizes[0].bytes == 200);
  }
}

TEST_CASE("packed records: objprof dump counts and prints resizes, folded or not", "[trace][packed][cli]") {
  const std::string cli = std::string(OBJPROF_BIN_DIR) + "/objprof";
  REQUIRE(::access(cli.c_str(), X_OK) == 0);
  TraceBuilder b;
  b.thread(0, "main");
  EventBuffer& t = b.thread_stream(0);
  t.alloc(10, 1, 0x10000, 56);
  t.resize(0x10000, 200);  // folded into the alloc
  t.alloc(10, 1, 0x10040, 56);
  t.free(0x10000);  // (a free in a thread stream is read like any other)
  t.resize(0x10040, 312);  // a record of its own
  t.flush();
  b.end();
  const std::vector<std::byte> data = b.take();
  const std::string path = "/tmp/objprof_test_dump_" + std::to_string(::getpid()) + ".trace";
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    REQUIRE(f != nullptr);
    REQUIRE(std::fwrite(data.data(), 1, data.size(), f) == data.size());
    std::fclose(f);
  }
  std::string text;
  std::FILE* p = ::popen((cli + " dump --records " + path + " 2>&1").c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) text += buf;
  const int rc = ::pclose(p);
  ::unlink(path.c_str());
  if ((!WIFEXITED(rc) || WEXITSTATUS(rc) == 126 || WEXITSTATUS(rc) == 127) && objprof::test::emulated()) {
    WARN("cannot run the arm64 objprof CLI from under the emulator; skipped: " << text);
    return;
  }
  INFO(text);
  REQUIRE(WIFEXITED(rc));
  CHECK(WEXITSTATUS(rc) == 0);
  CHECK(text.find("2 allocs (112 bytes), 2 resizes, 0 moves, 1 frees") != std::string::npos);
  CHECK(text.find("resize t0 0x10000 to 200 bytes") != std::string::npos);
  CHECK(text.find("resize t0 0x10040 to 312 bytes") != std::string::npos);
}

namespace {

void put_uvar_into(std::vector<std::uint8_t>& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<std::uint8_t>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<std::uint8_t>(v));
}
void put_u64_into(std::vector<std::uint8_t>& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

// A packed bitmap record (tag 24) of (index delta, word) entries as given.
std::vector<std::uint8_t> packed_bitmap(std::uint64_t space, std::uint64_t count,
                                        const std::vector<std::pair<std::uint64_t, std::uint64_t>>& entries) {
  std::vector<std::uint8_t> r = {static_cast<std::uint8_t>(trace::Tag::kBitmapPacked)};
  put_uvar_into(r, space);
  put_uvar_into(r, count);
  for (auto [delta, word] : entries) {
    put_uvar_into(r, delta);
    put_u64_into(r, word);
  }
  return r;
}

// One GC whose dump is `dump` (a raw control record), or the sparse form of `addrs` if empty.
std::vector<std::byte> gc_with_dump(const std::vector<std::uint8_t>& dump, const std::vector<std::uint64_t>& addrs) {
  TraceBuilder b;  // space 0: [0x10000, 0x20000), 8-byte granules: 128 words of bitmap
  b.thread(0, "main");
  for (std::uint64_t a : addrs) b.alloc(0, 0, 0, a, 8);
  b.gc_begin();
  if (dump.empty()) b.bitmap(addrs);
  else b.raw_control(dump);
  b.gc_end();
  b.end();
  return b.take();
}

}  // namespace

TEST_CASE("packed bitmap dumps: read as the sparse form, malformed ones and ones before version 6 refused",
          "[trace][packed]") {
  // Granules 0, 70 and 8191 (the space's last): words 0, 1 and 127.
  const std::vector<std::uint64_t> addrs = {0x10000, 0x10000 + 70 * 8, 0x10000 + 8191 * 8};
  const auto sparse = trace::load(gc_with_dump({}, addrs));
  REQUIRE(sparse.ok());
  const std::vector<std::uint8_t> good =
      packed_bitmap(0, 3, {{0, 1}, {1, std::uint64_t{1} << 6}, {126, std::uint64_t{1} << 63}});
  const auto packed = trace::load(gc_with_dump(good, addrs));
  REQUIRE(packed.ok());
  CHECK(packed->marked_addresses(0) == addrs);
  CHECK(packed->marked_addresses(0) == sparse->marked_addresses(0));

  std::vector<std::byte> v5 = gc_with_dump(good, addrs);
  set_version(v5, 5);
  CHECK(load_error(v5).find("packed bitmap record in a version 5 trace") != std::string::npos);

  CHECK(load_error(gc_with_dump(packed_bitmap(0, 2, {{3, 1}, {0, 2}}), addrs)).find("increasing word order") !=
        std::string::npos);
  CHECK(load_error(gc_with_dump(packed_bitmap(0, 1, {{128, 1}}), addrs)).find("outside space 0") != std::string::npos);
  CHECK(load_error(gc_with_dump(packed_bitmap(0, 2, {{127, 1}, {1, 1}}), addrs)).find("outside space 0") !=
        std::string::npos);
  CHECK(load_error(gc_with_dump(packed_bitmap(7, 1, {{0, 1}}), addrs)).find("undeclared space 7") != std::string::npos);
  CHECK(load_error(gc_with_dump(packed_bitmap(0, 1'000'000, {{0, 1}}), addrs)).find("does not fit") !=
        std::string::npos);
  CHECK(load_error(gc_with_dump(packed_bitmap(std::uint64_t{1} << 40, 1, {{0, 1}}), addrs)).find("32 bits") !=
        std::string::npos);
  // Entries cut short: fewer bytes than the count's entries can take, or a word running past
  // the chunk after a long index delta.
  std::vector<std::uint8_t> cut = packed_bitmap(0, 1, {{0, 1}});
  cut.resize(cut.size() - 3);
  CHECK(load_error(gc_with_dump(cut, addrs)).find("does not fit") != std::string::npos);
  std::vector<std::uint8_t> cut_word = packed_bitmap(0, 2, {{0, 1}, {std::uint64_t{1} << 30, 1}});
  cut_word.resize(cut_word.size() - 3);
  CHECK(load_error(gc_with_dump(cut_word, addrs)).find("bitmap word needs 8 bytes") != std::string::npos);
}

namespace {

// A bitmap-runs record (tag 25) of (gap, words...) runs as given, with `count` as its count.
std::vector<std::uint8_t> runs_bitmap(std::uint64_t space, std::uint64_t count,
                                      const std::vector<std::pair<std::uint64_t, std::vector<std::uint64_t>>>& runs) {
  std::vector<std::uint8_t> r = {static_cast<std::uint8_t>(trace::Tag::kBitmapRuns)};
  put_uvar_into(r, space);
  put_uvar_into(r, count);
  for (const auto& [gap, words] : runs) {
    put_uvar_into(r, gap);
    put_uvar_into(r, words.size());
    for (std::uint64_t w : words) put_u64_into(r, w);
  }
  return r;
}

}  // namespace

TEST_CASE("bitmap runs: read as the sparse form, zero words inside a run ignored, malformed ones and ones before "
          "version 7 refused",
          "[trace][packed]") {
  // Granules 0, 70, 130 (words 0, 1, 2: one run), 64 * 10 + 5 (word 10, a run of one, with a
  // zero word before it in its run) and 8191 (the space's last, word 127).
  const std::vector<std::uint64_t> addrs = {0x10000, 0x10000 + 70 * 8, 0x10000 + 130 * 8, 0x10000 + (640 + 5) * 8,
                                            0x10000 + 8191 * 8};
  const auto sparse = trace::load(gc_with_dump({}, addrs));
  REQUIRE(sparse.ok());
  const std::vector<std::uint8_t> good = runs_bitmap(
      0, 3,
      {{0, {1, std::uint64_t{1} << 6, std::uint64_t{1} << 2}}, {6, {0, std::uint64_t{1} << 5}}, {116, {std::uint64_t{1} << 63}}});
  const auto runs = trace::load(gc_with_dump(good, addrs));
  REQUIRE(runs.ok());
  CHECK(runs->marked_addresses(0) == addrs);
  CHECK(runs->marked_addresses(0) == sparse->marked_addresses(0));

  std::vector<std::byte> v6 = gc_with_dump(good, addrs);
  set_version(v6, 6);
  CHECK(load_error(v6).find("bitmap runs record in a version 6 trace") != std::string::npos);

  // (A second run's bytes after it: the count's check alone would refuse a record this short.)
  CHECK(load_error(gc_with_dump(runs_bitmap(0, 1, {{0, {}}, {0, {1}}}), addrs)).find("bitmap run of no words") !=
        std::string::npos);
  // Past the space's end: a run that starts beyond it, one that runs over it, a gap that takes
  // the second run there.
  CHECK(load_error(gc_with_dump(runs_bitmap(0, 1, {{128, {1}}}), addrs)).find("outside space 0") != std::string::npos);
  CHECK(load_error(gc_with_dump(runs_bitmap(0, 1, {{126, {1, 1, 1}}}), addrs)).find("outside space 0") !=
        std::string::npos);
  CHECK(load_error(gc_with_dump(runs_bitmap(0, 2, {{100, {1}}, {27, {1}}}), addrs)).find("outside space 0") !=
        std::string::npos);
  CHECK(load_error(gc_with_dump(runs_bitmap(0, 2, {{1, {1}}, {~std::uint64_t{0} - 1, {1}}}), addrs)).find("overflows") !=
        std::string::npos);
  CHECK(load_error(gc_with_dump(runs_bitmap(7, 1, {{0, {1}}}), addrs)).find("undeclared space 7") != std::string::npos);
  CHECK(load_error(gc_with_dump(runs_bitmap(0, 1'000'000, {{0, {1}}}), addrs)).find("does not fit") !=
        std::string::npos);
  CHECK(load_error(gc_with_dump(runs_bitmap(std::uint64_t{1} << 40, 1, {{0, {1}}}), addrs)).find("32 bits") !=
        std::string::npos);
  // A run's words cut short: its length says more than the chunk holds.
  std::vector<std::uint8_t> cut = runs_bitmap(0, 1, {{0, {1, 2, 3}}});
  cut.resize(cut.size() - 3);
  CHECK(load_error(gc_with_dump(cut, addrs)).find("does not fit") != std::string::npos);
}

TEST_CASE("record rules: each record refused in versions before its own, the header first and once", "[trace][packed]") {
  // A record that is refused by its tag alone: its body is never read. One past its version,
  // the same bytes get past the tag and fail on the body instead.
  const auto error_with = [](std::uint8_t tag, std::uint32_t version) {
    TraceBuilder b;
    b.thread(0, "main");
    b.raw_thread(0, {tag});
    b.end();
    std::vector<std::byte> t = b.take();
    set_version(t, version);
    return load_error(t);
  };
  const struct {
    trace::Tag tag;
    std::uint32_t since;
    const char* name;
  } versioned[] = {
      {trace::Tag::kResize, 2, "resize"},
      {trace::Tag::kPath, 3, "path"},
      {trace::Tag::kFreeRange, 4, "free-range"},
      {trace::Tag::kAllocPacked, 5, "packed alloc"},
      {trace::Tag::kAllocResized, 5, "packed alloc-resized"},
      {trace::Tag::kMovePacked, 5, "packed move"},
      {trace::Tag::kFreePacked, 5, "packed free"},
      {trace::Tag::kResizePacked, 5, "packed resize"},
      {trace::Tag::kBitmapPacked, 6, "packed bitmap"},
      {trace::Tag::kBitmapRuns, 7, "bitmap runs"},
      {trace::Tag::kMoveGranules, 8, "granule move"},
  };
  for (const auto& v : versioned) {
    INFO(v.name);
    const auto tag = static_cast<std::uint8_t>(v.tag);
    for (std::uint32_t version = trace::kMinVersion; version < v.since; ++version)
      CHECK(error_with(tag, version).find(fmt::format("{} record in a version {} trace", v.name, version)) != std::string::npos);
    const std::string in_its_version = error_with(tag, v.since);
    CHECK(in_its_version.find("record in a version") == std::string::npos);
    CHECK((in_its_version.find("runs past the end of its chunk") != std::string::npos ||
           in_its_version.find(" needs ") != std::string::npos));
  }

  TraceBuilder twice;
  twice.raw_collector({static_cast<std::uint8_t>(trace::Tag::kHeader)});
  twice.end();
  CHECK(load_error(twice.take()).find("second header record") != std::string::npos);

  // The header is the first chunk: without it, the thread's definition comes first.
  TraceBuilder b;
  b.thread(0, "main");
  b.end();
  std::vector<std::byte> t = b.take();
  std::uint32_t header_payload = 0;
  std::memcpy(&header_payload, t.data() + trace::kPreambleBytes + 4, 4);
  const auto header_chunk = t.begin() + trace::kPreambleBytes;
  t.erase(header_chunk, header_chunk + trace::kChunkHeaderBytes + header_payload);
  CHECK(load_error(t).find(fmt::format("record tag {} before the header record", static_cast<int>(trace::Tag::kThreadDef))) !=
        std::string::npos);
}
