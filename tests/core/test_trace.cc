#include "test_support.h"

#include <objprof/crc32c.h>
#include <objprof/profiler.h>
#include <objprof/trace_reader.h>
#include <objprof/trace_writer.h>

#include <unistd.h>

#include <algorithm>
#include <barrier>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <random>
#include <thread>

namespace test_trace {

using namespace objprof;
using objprof::test::FakeHeap;

TEST_CASE("CRC32C matches the standard check value and the portable implementation", "[core][crc]") {
  const char* check = "123456789";
  CHECK(crc32c(check, 9) == 0xE3069283u);
  CHECK(crc32c_portable(check, 9) == 0xE3069283u);
  CHECK(crc32c(check + 4, 5, crc32c(check, 4)) == 0xE3069283u);  // continuation
  CHECK(crc32c_portable(check + 4, 5, crc32c_portable(check, 4)) == 0xE3069283u);
}

TEST_CASE("CRC32C: every path this CPU runs equals the portable one, forced one by one", "[core][crc]") {
  std::mt19937_64 rng(7);
  std::vector<std::uint8_t> buf(3 * 3072 + 4096 + 13);  // long enough for the 3-stream blocks (1 KiB and 256-byte streams)
  for (auto& b : buf) b = static_cast<std::uint8_t>(rng());
  const char* check = "123456789";
  std::size_t paths_run = 0;
  for (Crc32cPath path : kAllCrc32cPaths) {
    INFO("path " << crc32c_path_name(path));
    if (!crc32c_supported(path)) continue;
    ++paths_run;
    CHECK(crc32c_with(path, check, 9) == 0xE3069283u);
    CHECK(crc32c_with(path, check + 4, 5, crc32c_with(path, check, 4)) == 0xE3069283u);
    for (std::size_t off : {0, 1, 3, 7}) {
      for (std::size_t len : {0, 1, 7, 8, 9, 63, 64, 767, 768, 769, 1000, 1536, 2303, 2304, 3071, 3072, 3073, 3840,
                               4096, 6144 + 5, 3 * 3072 + 4096}) {
        const std::uint32_t want = crc32c_portable(buf.data() + off, len);
        CHECK(crc32c_with(path, buf.data() + off, len) == want);
        // Continued from a split anywhere, as the writer continues over header and payload.
        const std::size_t cut = len / 3;
        CHECK(crc32c_with(path, buf.data() + off + cut, len - cut, crc32c_with(path, buf.data() + off, cut)) == want);
      }
    }
  }
  CHECK(paths_run >= 1);
#if defined(__x86_64__) || defined(__aarch64__)
  // Every CPU objprof's tests run on (x86_64 with SSE4.2, arm64 with CRC, qemu -cpu max) has
  // the instruction: if detection failed, the fast paths would silently never run.
  CHECK(paths_run == std::size(kAllCrc32cPaths));
#endif
}

TEST_CASE("CRC32C: the path in use is the best one unless OBJPROF_CRC32C forces another", "[core][crc]") {
  const Crc32cPath best = crc32c_supported(Crc32cPath::kHardware3) ? Crc32cPath::kHardware3 : Crc32cPath::kPortable;
  const char* forced = std::getenv("OBJPROF_CRC32C");
  auto named = crc32c_path_from_name(forced != nullptr ? forced : "");
  // A name it cannot use (unknown, or a path this CPU lacks) leaves the best path in use.
  CHECK(crc32c_path() == (named.ok() && crc32c_supported(*named) ? *named : best));
  CHECK(crc32c_hardware() == (crc32c_path() != Crc32cPath::kPortable));
  for (Crc32cPath p : kAllCrc32cPaths) {
    auto back = crc32c_path_from_name(crc32c_path_name(p));
    REQUIRE(back.ok());
    CHECK(*back == p);
  }
  auto bad = crc32c_path_from_name("avx512");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().code == ErrorCode::kInvalidArgument);
  CHECK(bad.error().message.find("portable, hardware, hardware3") != std::string::npos);
}

namespace {

std::vector<std::byte> small_trace(int gcs = 3) {
  FakeHeap heap(1 << 16);
  auto sink = std::make_unique<MemorySink>();
  MemorySink* raw = sink.get();
  ProfilerOptions o;
  o.trace_sink = std::move(sink);
  o.chunk_payload = 256;  // many small chunks: more places to cut
  o.default_leak_printer = false;
  auto p = Profiler::create(std::move(o));
  REQUIRE(p.ok());
  Profiler& prof = **p;
  REQUIRE(prof.add_space(heap.space()).ok());
  REQUIRE(prof.define_type({1, "Node", 32, false}).ok());
  REQUIRE(prof.define_site({7, 0x1234, "Main.run", 3}).ok());
  ThreadState* t = *prof.attach_thread(0, "main");
  for (int gc = 0; gc < gcs; ++gc) {
    for (int i = 0; i < 20; ++i) {
      const Address a = heap.at(static_cast<std::size_t>(gc * 2048 + i * 32));
      prof.on_alloc(*t, 7, 1, a, 32);
      access<>(*t, prof.bitmap(0), a);
    }
    REQUIRE(prof.gc_begin(GcKind::kFull).ok());
    prof.on_free(heap.at(static_cast<std::size_t>(gc * 2048)));
    prof.on_move(heap.at(static_cast<std::size_t>(gc * 2048 + 32)), heap.at(60000 - static_cast<std::size_t>(gc) * 32));  // objects are 32 bytes
    REQUIRE(prof.gc_end().ok());
  }
  REQUIRE(prof.finish().ok());
  return raw->take();
}

void put_u32(std::vector<std::byte>& v, std::size_t at, std::uint32_t x) { std::memcpy(v.data() + at, &x, 4); }
std::uint32_t get_u32(const std::vector<std::byte>& v, std::size_t at) {
  std::uint32_t x;
  std::memcpy(&x, v.data() + at, 4);
  return x;
}

// Offsets of every chunk header in a well-formed trace.
std::vector<std::size_t> chunk_offsets(const std::vector<std::byte>& t) {
  std::vector<std::size_t> out;
  for (std::size_t at = trace::kPreambleBytes; at + trace::kChunkHeaderBytes <= t.size();) {
    out.push_back(at);
    at += trace::kChunkHeaderBytes + get_u32(t, at + 4);
  }
  return out;
}

void reseal(std::vector<std::byte>& t, std::size_t chunk) {
  const std::uint32_t n = get_u32(t, chunk + 4);
  put_u32(t, chunk + 8, crc32c(t.data() + chunk + 12, 12 + n));
}

}  // namespace

TEST_CASE("A trace round-trips: definitions, allocs, moves, frees, GCs, bitmaps, end", "[core][trace]") {
  auto bytes = small_trace();
  auto c = trace::load(bytes);
  REQUIRE(c.ok());
  CHECK(c->summary.complete);
  CHECK_FALSE(c->summary.truncated);
  CHECK(c->summary.warning.empty());
  CHECK(c->header.granule_bytes == 8);
  REQUIRE(c->header.spaces.size() == 1);
  REQUIRE(c->types.size() == 1);
  CHECK(c->types[0].name == "Node");
  REQUIRE(c->sites.size() == 1);
  CHECK(c->sites[0].method == "Main.run");
  CHECK(c->sites[0].pc == 0x1234);
  CHECK(c->allocs.size() == 60);
  CHECK(c->frees.size() == 3);
  CHECK(c->moves.size() == 3);
  CHECK(c->gc_begins.size() == 3);
  CHECK(c->gc_ends.size() == 3);
  // Both clocks: the bytes clock is the running sum of sizes; GC records carry the total.
  for (std::size_t i = 0; i < c->allocs.size(); ++i) {
    CHECK(c->allocs[i].bytes_clock == 32 * i);
    CHECK(c->allocs[i].epoch == i / 20);
  }
  CHECK(c->gc_begins[1].bytes_allocated == 40 * 32);
  // Epoch e's bitmap holds exactly the 20 objects accessed in epoch e.
  for (std::uint64_t e = 0; e < 3; ++e) {
    auto marked = c->marked_addresses(e);
    REQUIRE(marked.size() == 20);
    CHECK(marked[0] == c->header.spaces[0].begin + e * 2048);
  }
}

// The bitmap dump is written as runs of non-zero words, split into records that fit a chunk:
// whatever the chunk size, the trace holds exactly the granules marked, among them runs longer
// than a chunk (the smallest chunk takes ~28 words, the default ~8 K) and runs of one word at
// the space's ends; and a dense dump takes little more than its words.
// A buffer checksums its records a block at a time as they are written, and the framing
// continues from there. Whatever the records, flush points, chunk sizes (one block, several,
// not a multiple of a block, a chunk smaller than a block), epoch changes between a block and
// the flush and chunks held by a sweep bracket (stamped with another epoch than their blocks
// were taken for), every chunk's stored checksum is the CRC32C of its stream, epoch and
// payload, computed afresh. Allocs followed by resizes are among the records: the alloc's tag
// is rewritten when the resize extends it, after any block that stopped before it.
TEST_CASE("A chunk checksummed while it is written has the checksum of its bytes", "[core][trace]") {
  std::mt19937_64 rng(5);
  for (std::size_t chunk : {std::size_t{300}, EventBuffer::kCrcBlock, EventBuffer::kCrcBlock * 3 + 123,
                            trace::kDefaultChunkPayload}) {
    CAPTURE(chunk);
    auto sink = std::make_unique<MemorySink>();
    MemorySink* raw = sink.get();
    auto writer = TraceWriter::create(std::move(sink), chunk);
    REQUIRE(writer.ok());
    TraceWriter& w = **writer;
    std::vector<std::unique_ptr<EventBuffer>> buffers;
    buffers.push_back(w.make_buffer(trace::kThreadStreamBase));
    buffers.push_back(w.make_buffer(trace::kThreadStreamBase + 1));
    buffers.push_back(w.make_buffer(trace::kCollectorStream));
    std::uint64_t epoch = 0, addr = 0x100000, resized = 0;
    for (int i = 0; i < 200000; ++i) {
      EventBuffer& b = *buffers[rng() % buffers.size()];
      addr += 8 * (rng() % 64);
      switch (rng() % 8) {
        case 0: case 1: case 2:
          b.alloc(static_cast<std::uint32_t>(rng() % 300), 1, addr, 16 + rng() % 200);
          if (rng() % 2 == 0) {
            b.resize(addr, 300 + rng() % 5000);
            ++resized;
          }
          break;
        case 3: b.move(addr, addr + 0x1000 + 8 * (rng() % 1000)); break;
        case 4: b.free(addr); break;
        case 5: b.move_range(addr, addr + 4096, 8 * (rng() % 100)); break;
        case 6: {
          if (rng() % 8 != 0) break;
          // A record of its own length (a bitmap piece): beyond a block at times.
          const std::size_t n = std::min<std::size_t>(1 + rng() % (2 * EventBuffer::kCrcBlock), b.capacity());
          std::uint8_t* p = b.begin_record_at_most(n);
          for (std::size_t k = 0; k < n; ++k) p[k] = static_cast<std::uint8_t>(rng());
          b.end_record(p + n);
          break;
        }
        case 7: {
          const auto r = rng() % 1000;
          if (r < 5) b.flush();
          else if (r < 8) w.set_epoch(++epoch);
          else if (r < 9) w.hold_mutator_chunks(epoch + 1);
          else if (r < 10) w.release_held();
          break;
        }
      }
    }
    for (auto& b : buffers) b->flush();
    w.release_held();
    CHECK(resized > 0);
    const std::vector<std::byte> bytes = raw->take();
    const std::vector<std::size_t> chunks = chunk_offsets(bytes);
    CHECK(chunks.size() > 20);
    std::size_t wrong = 0;
    for (std::size_t at : chunks) {
      const std::uint32_t n = get_u32(bytes, at + 4);
      REQUIRE(at + trace::kChunkHeaderBytes + n <= bytes.size());
      if (get_u32(bytes, at + 8) != crc32c(bytes.data() + at + 12, 12 + n)) ++wrong;
    }
    CHECK(wrong == 0);
  }
}

TEST_CASE("A bitmap dump in runs holds every marked granule at any chunk size, ~8 bytes per marked word", "[core][trace]") {
  FakeHeap heap(std::size_t{1} << 23);  // 1 M granules: 16 K words of bits
  std::mt19937_64 rng(11);
  std::vector<std::uint64_t> granules;
  const auto run = [&](std::uint64_t first_word, std::uint64_t words) {  // one to four marks a word
    for (std::uint64_t w = first_word; w < first_word + words; ++w)
      for (int k = 0, n = 1 + static_cast<int>(rng() % 4); k < n; ++k) granules.push_back(w * 64 + rng() % 64);
  };
  run(0, 1);
  for (int i = 0; i < 40; ++i) run(100 + rng() % 1000, 1 + rng() % 3);  // short runs, some touching
  run(1200, 100);
  run(2000, 12000);  // longer than a default chunk
  run(16383, 1);
  std::sort(granules.begin(), granules.end());
  granules.erase(std::unique(granules.begin(), granules.end()), granules.end());
  std::vector<std::uint64_t> want;
  for (std::uint64_t g : granules) want.push_back(heap.at(static_cast<std::size_t>(g * 8)));
  std::uint64_t words = 0, runs = 0;
  for (std::size_t i = 0; i < granules.size(); ++i) {
    if (i > 0 && granules[i] / 64 == granules[i - 1] / 64) continue;
    ++words;
    if (i == 0 || granules[i] / 64 != granules[i - 1] / 64 + 1) ++runs;
  }
  for (std::size_t chunk : {std::size_t{256}, std::size_t{4096}, trace::kDefaultChunkPayload}) {
    CAPTURE(chunk);
    auto sink = std::make_unique<MemorySink>();
    MemorySink* raw = sink.get();
    ProfilerOptions o;
    o.trace_sink = std::move(sink);
    o.chunk_payload = chunk;
    o.default_leak_printer = false;
    auto p = Profiler::create(std::move(o));
    REQUIRE(p.ok());
    Profiler& prof = **p;
    REQUIRE(prof.add_space(heap.space()).ok());
    ThreadState* t = *prof.attach_thread(0, "main");
    for (Address a : want) access<>(*t, prof.bitmap(0), a);
    REQUIRE(prof.gc_begin(GcKind::kFull).ok());
    REQUIRE(prof.gc_end().ok());
    // The buffer went back clean: the next epoch's dump is empty.
    REQUIRE(prof.gc_begin(GcKind::kFull).ok());
    REQUIRE(prof.gc_end().ok());
    REQUIRE(prof.finish().ok());
    const std::vector<std::byte> bytes = raw->take();
    auto c = trace::load(bytes);
    REQUIRE(c.ok());
    CHECK(c->marked_addresses(0) == want);
    CHECK(c->marked_addresses(1).empty());
    if (chunk == trace::kDefaultChunkPayload) {
      // 8 bytes a word, a few bytes a run and a record, the file's other records: ~1 KB.
      CAPTURE(words, runs);
      CHECK(bytes.size() <= words * 8 + runs * 4 + 1024);
    }
  }
}

TEST_CASE("A trace cut at any byte reads up to its last whole chunk", "[core][trace]") {
  auto full = small_trace();
  auto complete = trace::load(full);
  REQUIRE(complete.ok());
  const auto chunks = chunk_offsets(full);
  REQUIRE(chunks.size() > 10);
  for (std::size_t cut = 0; cut < full.size(); ++cut) {
    std::vector<std::byte> part(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(cut));
    auto c = trace::load(part);
    if (cut < trace::kPreambleBytes + trace::kChunkHeaderBytes + 1) {
      // Too short for a header record: refused, with a reason.
      if (!c.ok()) CHECK_FALSE(c.error().message.empty());
      continue;
    }
    REQUIRE(c.ok());
    const bool on_boundary = std::find(chunks.begin(), chunks.end(), cut) != chunks.end();
    CHECK(c->summary.truncated == !on_boundary);
    CHECK_FALSE(c->summary.complete);
    CHECK_FALSE(c->summary.warning.empty());
    CHECK(c->allocs.size() <= complete->allocs.size());
    // Whatever was read is a prefix of the full trace.
    for (std::size_t i = 0; i < c->allocs.size(); ++i) CHECK(c->allocs[i].addr == complete->allocs[i].addr);
  }
}

TEST_CASE("A flipped bit anywhere is refused with a clear error", "[core][trace]") {
  auto full = small_trace(1);
  std::mt19937 rng(42);
  for (std::size_t at = 0; at < full.size(); ++at) {
    auto bad = full;
    bad[at] ^= std::byte{static_cast<unsigned char>(1u << (rng() % 8))};
    auto c = trace::load(bad);
    if (c.ok()) {
      // The only tolerable outcome: a flip in a chunk length that makes the file look cut.
      CHECK(c->summary.truncated);
      continue;
    }
    const auto& msg = c.error().message;
    CHECK((msg.find("CRC32C") != std::string::npos || msg.find("magic") != std::string::npos ||
           msg.find("version") != std::string::npos || msg.find("flags") != std::string::npos || msg.find("exceeds") != std::string::npos));
  }
}

TEST_CASE("Malformed records with valid checksums are refused, naming chunk and offset", "[core][trace]") {
  auto full = small_trace(1);
  const auto chunks = chunk_offsets(full);
  const std::size_t first_payload = chunks[0] + trace::kChunkHeaderBytes;
  SECTION("unknown tag") {
    full[first_payload] = std::byte{0xEE};
    reseal(full, chunks[0]);
    auto c = trace::load(full);
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().code == ErrorCode::kCorrupt);
    CHECK(c.error().message.find("chunk 0 at offset 16") != std::string::npos);
    CHECK(c.error().message.find("unknown record tag 238") != std::string::npos);
  }
  SECTION("string length past the end of the chunk") {
    // Header record: tag, u32 granule, u16 count, u32 id, u64 begin, u64 end, u16 name length.
    const std::size_t name_len_at = first_payload + 1 + 4 + 2 + 4 + 8 + 8;
    full[name_len_at] = std::byte{0xFF};
    full[name_len_at + 1] = std::byte{0xFF};
    reseal(full, chunks[0]);
    auto c = trace::load(full);
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().message.find("space name needs") != std::string::npos);
  }
  SECTION("granule that is not a power of two") {
    put_u32(full, first_payload + 1, 12);
    reseal(full, chunks[0]);
    auto c = trace::load(full);
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().message.find("power of two") != std::string::npos);
  }
  SECTION("oversized chunk length is refused before allocating") {
    put_u32(full, chunks[1] + 4, 0xFFFFFFF0u);
    auto c = trace::load(full);
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().message.find("exceeds") != std::string::npos);
  }
  SECTION("foreign file") {
    std::vector<std::byte> junk(100, std::byte{'x'});
    auto c = trace::load(junk);
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().message.find("not an objprof trace") != std::string::npos);
  }
  SECTION("missing file") {
    auto c = trace::load_file("/nonexistent/objprof.trace");
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().code == ErrorCode::kIo);
    CHECK(c.error().message.find("/nonexistent/objprof.trace") != std::string::npos);
  }
}

TEST_CASE("Fuzz: mutated payloads with recomputed checksums never crash the reader", "[core][trace][fuzz]") {
  // The CRC would reject most mutations before decoding; resealing sends them into the record
  // decoder, which must bounds-check everything (run under ASan/UBSan in the test command).
  auto full = small_trace(2);
  const auto chunks = chunk_offsets(full);
  std::mt19937_64 rng(1234);
  int refused = 0, accepted = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    auto bad = full;
    const std::size_t chunk = chunks[rng() % chunks.size()];
    const std::size_t payload = get_u32(bad, chunk + 4);
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = chunk + trace::kChunkHeaderBytes + rng() % std::max<std::size_t>(payload, 1);
      switch (rng() % 3) {
        case 0: bad[at] = std::byte{static_cast<unsigned char>(rng())}; break;
        case 1: bad[at] = std::byte{0xFF}; break;
        default: bad[at] = std::byte{0}; break;
      }
    }
    reseal(bad, chunk);
    if (rng() % 4 == 0) bad.resize(rng() % bad.size());
    auto c = trace::load(bad);
    if (c.ok()) ++accepted; else ++refused;
    if (!c.ok()) CHECK_FALSE(c.error().message.empty());
  }
  CHECK(refused > 0);
  INFO("accepted " << accepted << " refused " << refused);
}

TEST_CASE("Many threads write through the hooks, and the reader sees every event in per-thread order", "[core][trace][threads]") {
  constexpr int kThreads = 4, kEpochs = 3;
  const int kPerEpoch = static_cast<int>(objprof::test::scaled(1500, 30)) * 2;  // even: half are accessed
  FakeHeap heap(std::size_t{kThreads} * kEpochs * kPerEpoch * 16);
  auto sink = std::make_unique<MemorySink>();
  MemorySink* raw = sink.get();
  ProfilerOptions o;
  o.trace_sink = std::move(sink);
  o.chunk_payload = 4096;
  o.default_leak_printer = false;
  auto p = Profiler::create(std::move(o));
  REQUIRE(p.ok());
  Profiler& prof = **p;
  REQUIRE(prof.add_space(heap.space()).ok());
  REQUIRE(prof.define_type({1, "T", 16, false}).ok());
  for (int t = 0; t < kThreads; ++t) REQUIRE(prof.define_site({static_cast<std::uint32_t>(t), 0, "site", 0}).ok());

  // Mutators allocate and access; at each epoch end they stop at a barrier while the main
  // thread (the collector) runs gc_begin/gc_end, as a stop-the-world runtime would.
  std::barrier<> sync(kThreads + 1);
  auto addr_of = [&](int t, int e, int i) {
    return heap.at((static_cast<std::size_t>(t) * kEpochs * kPerEpoch + static_cast<std::size_t>(e) * kPerEpoch + static_cast<std::size_t>(i)) * 16);
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ThreadState* ts = *prof.attach_thread(static_cast<std::uint32_t>(t), "worker-" + std::to_string(t));
      for (int e = 0; e < kEpochs; ++e) {
        for (int i = 0; i < kPerEpoch; ++i) {
          const Address a = addr_of(t, e, i);
          prof.on_alloc(*ts, static_cast<std::uint32_t>(t), 1, a, 16);
          if (i % 2 == 0) access<BarrierPolicy<true, MarkMode::kAtomic>>(*ts, prof.bitmap(0), a);
        }
        sync.arrive_and_wait();  // reach the safepoint
        sync.arrive_and_wait();  // GC done
      }
      prof.detach_thread(*ts);
    });
  }
  for (int e = 0; e < kEpochs; ++e) {
    sync.arrive_and_wait();
    REQUIRE(prof.gc_begin(GcKind::kFull).ok());
    REQUIRE(prof.gc_end().ok());
    sync.arrive_and_wait();
  }
  for (auto& th : threads) th.join();
  REQUIRE(prof.finish().ok());
  auto c = trace::load(raw->data());
  REQUIRE(c.ok());
  CHECK(c->summary.complete);
  REQUIRE(c->allocs.size() == std::size_t{kThreads} * kEpochs * kPerEpoch);
  CHECK(c->threads.size() == kThreads);
  CHECK(c->ended_threads.size() == kThreads);
  std::map<std::uint32_t, std::vector<Address>> per_thread;
  for (const auto& a : c->allocs) {
    CHECK(a.site == a.thread);
    per_thread[a.thread].push_back(a.addr);
  }
  for (int t = 0; t < kThreads; ++t) {
    const auto& v = per_thread[static_cast<std::uint32_t>(t)];
    REQUIRE(v.size() == std::size_t{kEpochs} * kPerEpoch);
    for (int e = 0; e < kEpochs; ++e)
      for (int i = 0; i < kPerEpoch; ++i) CHECK(v[static_cast<std::size_t>(e * kPerEpoch + i)] == addr_of(t, e, i));
  }
  // Allocs carry the epoch they happened in, and every epoch's bitmap has exactly the
  // accessed half of that epoch's objects.
  for (const auto& a : c->allocs) CHECK(a.epoch == (a.addr - heap.space().begin()) / 16 % (kEpochs * kPerEpoch) / kPerEpoch);
  for (int e = 0; e < kEpochs; ++e) CHECK(c->marked_addresses(static_cast<std::uint64_t>(e)).size() == std::size_t{kThreads} * kPerEpoch / 2);
  CHECK(c->gc_ends.back().bytes_allocated == std::uint64_t{kThreads} * kEpochs * kPerEpoch * 16);
}

namespace {

// A sink that gathers (ChunkSink::gather_bytes) and keeps every write apart.
class WriteRecorder final : public ChunkSink {
 public:
  explicit WriteRecorder(std::size_t gather) : gather_(gather) {}
  Status write(std::span<const std::byte> bytes) override {
    writes.emplace_back(bytes.begin(), bytes.end());
    return {};
  }
  std::size_t gather_bytes() const noexcept override { return gather_; }
  std::vector<std::byte> joined() const {
    std::vector<std::byte> all;
    for (const auto& w : writes) all.insert(all.end(), w.begin(), w.end());
    return all;
  }
  std::vector<std::vector<std::byte>> writes;

 private:
  std::size_t gather_;
};

// Whole chunks, back to back, and nothing else: how many (0 if `w` is not that).
std::size_t whole_chunks(const std::vector<std::byte>& w) {
  std::size_t n = 0, at = 0;
  while (at + trace::kChunkHeaderBytes <= w.size()) {
    if (get_u32(w, at) != trace::kChunkMagic) return 0;
    at += trace::kChunkHeaderBytes + get_u32(w, at + 4);
    ++n;
  }
  return at == w.size() ? n : 0;
}

// Four GCs of allocations, accesses, frees and moves into `sink`, with small chunks (several
// per GC hook); right before each GC hook, `hook(gc, is_end, false)`, and after it returns,
// `hook(gc, is_end, true)`; then `finished(profiler, what finish() returned)`, the sink still
// alive. A sink's failure does not stop the GCs: only the trace reports it.
template <class AfterHook, class Finished>
void gc_rounds(const FakeHeap& heap, std::unique_ptr<ChunkSink> sink, AfterHook&& after_hook, Finished&& finished) {
  ProfilerOptions o;
  o.trace_sink = std::move(sink);
  o.chunk_payload = 256;
  o.default_leak_printer = false;
  auto p = Profiler::create(std::move(o));
  REQUIRE(p.ok());
  Profiler& prof = **p;
  REQUIRE(prof.add_space(heap.space()).ok());
  REQUIRE(prof.define_type({1, "Node", 32, false}).ok());
  ThreadState* t = *prof.attach_thread(0, "main");
  for (int gc = 0; gc < 4; ++gc) {
    for (int i = 0; i < 200; ++i) {
      const Address a = heap.at(static_cast<std::size_t>(gc * 16384 + i * 64));
      prof.on_alloc(*t, 0, 1, a, 64);
      if (i % 3 == 0) access<>(*t, prof.bitmap(0), a);
    }
    after_hook(gc, false, false);
    REQUIRE(prof.gc_begin(GcKind::kFull).ok());
    after_hook(gc, false, true);
    for (int i = 0; i < 200; i += 2) prof.on_free(heap.at(static_cast<std::size_t>(gc * 16384 + i * 64)));
    for (int i = 1; i < 100; i += 2)
      prof.on_move(heap.at(static_cast<std::size_t>(gc * 16384 + i * 64)), heap.at(static_cast<std::size_t>(65536 + gc * 8192 + i * 64)));
    after_hook(gc, true, false);
    REQUIRE(prof.gc_end().ok());
    after_hook(gc, true, true);
  }
  const Status status = prof.finish();
  finished(prof, status);
}

// The trace of gc_rounds one chunk per write (a memory sink does not gather).
std::vector<std::byte> ungathered_trace(const FakeHeap& heap) {
  auto sink = std::make_unique<MemorySink>();
  MemorySink* raw = sink.get();
  std::vector<std::byte> bytes;
  gc_rounds(heap, std::move(sink), [](int, bool, bool) {}, [&](Profiler&, const Status& finished) {
    REQUIRE(finished.ok());
    bytes = raw->take();
  });
  return bytes;
}

}  // namespace

TEST_CASE("A sink that gathers gets each GC hook's chunks in one write: the same bytes, whole chunks, none held back",
          "[core][trace]") {
  const FakeHeap heap(1 << 17);  // one heap for every run: the same addresses, the same bytes
  // The same events one chunk per write ...
  const std::vector<std::byte> expected = ungathered_trace(heap);
  const std::size_t chunks = chunk_offsets(expected).size();
  REQUIRE(chunks >= 4 * 8);  // 256-byte chunks: several per GC hook (8 hooks)

  // ... and gathered, with room for a whole hook and with room for about one chunk.
  for (const std::size_t limit : {std::size_t{1} << 20, std::size_t{300}}) {
    CAPTURE(limit);
    auto gathering = std::make_unique<WriteRecorder>(limit);
    WriteRecorder* rec = gathering.get();
    std::size_t before = 0;
    std::size_t hooks_with_several_writes = 0;
    std::vector<std::vector<std::byte>> writes;
    gc_rounds(heap, std::move(gathering), [&](int gc, bool is_end, bool returned) {
      if (!returned) {  // the mutators' and collector's full buffers went out before the hook
        before = rec->writes.size();
        return;
      }
      CAPTURE(gc, is_end);
      const std::size_t added = rec->writes.size() - before;
      CHECK(added >= 1);
      if (limit > 4096) CHECK(added == 1);  // the whole hook in one write
      if (added > 1) ++hooks_with_several_writes;
      // Nothing of the hook is held back: what the sink has reads up to this GC's end.
      auto sofar = trace::load(rec->joined());
      REQUIRE(sofar.ok());
      CHECK(sofar->gc_begins.size() == static_cast<std::size_t>(gc + 1));
      CHECK(sofar->gc_ends.size() == static_cast<std::size_t>(gc + (is_end ? 1 : 0)));
      if (is_end) CHECK(sofar->frees.size() == static_cast<std::size_t>(100 * (gc + 1)));
    }, [&](Profiler&, const Status& finished) {
      REQUIRE(finished.ok());
      writes = rec->writes;
    });
    if (limit < 4096) CHECK(hooks_with_several_writes > 0);  // the limit splits a hook's chunks
    std::vector<std::byte> joined;
    std::size_t gathered = 0;
    for (std::size_t i = 0; i < writes.size(); ++i) {
      joined.insert(joined.end(), writes[i].begin(), writes[i].end());
      if (i == 0) continue;  // the preamble
      const std::size_t n = whole_chunks(writes[i]);
      CHECK(n >= 1);
      if (n > 1) CHECK(writes[i].size() <= limit);  // a chunk above the limit goes alone
      gathered += n;
    }
    CHECK(joined == expected);
    CHECK(gathered == chunks);
    CHECK(writes.size() < chunks + 1);
  }
}

TEST_CASE("A gathering sink that fails: the error is kept, every later chunk counted lost, the file a valid prefix",
          "[core][trace]") {
  // Fails the `fail_at`-th write of several chunks (1: the first; a GC hook's, gathered) and
  // every write after it, keeping what came before.
  class FailingSink final : public ChunkSink {
   public:
    explicit FailingSink(std::size_t fail_at) : fail_at_(fail_at) {}
    Status write(std::span<const std::byte> bytes) override {
      const std::vector<std::byte> w(bytes.begin(), bytes.end());
      if (failing_ || (whole_chunks(w) > 1 && ++gathered_ == fail_at_)) {
        failing_ = true;
        return make_error(ErrorCode::kIo, "disk full (test)");
      }
      kept.insert(kept.end(), w.begin(), w.end());
      return {};
    }
    std::size_t gather_bytes() const noexcept override { return std::size_t{1} << 20; }
    std::vector<std::byte> kept;

   private:
    std::size_t fail_at_;
    std::size_t gathered_ = 0;
    bool failing_ = false;
  };
  const FakeHeap heap(1 << 17);
  const std::vector<std::byte> expected = ungathered_trace(heap);
  const std::size_t chunks = chunk_offsets(expected).size();
  for (const std::size_t fail_at : {std::size_t{1}, std::size_t{2}, std::size_t{5}}) {
    CAPTURE(fail_at);
    auto sink = std::make_unique<FailingSink>(fail_at);
    FailingSink* raw = sink.get();  // the profiler's until gc_rounds returns
    std::vector<std::byte> kept;
    // The GCs themselves go on (gc_rounds requires every gc_begin and gc_end to succeed); the
    // trace reports the failure.
    gc_rounds(heap, std::move(sink), [](int, bool, bool) {}, [&](Profiler& prof, const Status& finished) {
      REQUIRE_FALSE(finished.ok());
      CHECK(finished.error().message.find("disk full (test)") != std::string::npos);
      CHECK_FALSE(prof.trace_status().ok());
      const auto stats = prof.stats();
      CHECK(stats.trace_chunks_lost > 0);
      CHECK(stats.trace_chunks + stats.trace_chunks_lost == chunks);  // none unaccounted for
      kept = raw->kept;
    });
    // What reached the sink before the failure is the expected trace's prefix, whole chunks.
    REQUIRE(kept.size() > trace::kPreambleBytes);
    REQUIRE(kept.size() <= expected.size());
    CHECK(std::equal(kept.begin(), kept.end(), expected.begin()));
    CHECK(whole_chunks({kept.begin() + trace::kPreambleBytes, kept.end()}) > 0);
    auto prefix = trace::load(kept);
    REQUIRE(prefix.ok());
    CHECK_FALSE(prefix->summary.complete);
  }
}

TEST_CASE("Trace files are written whole and read back from disk", "[core][trace]") {
  const std::string path = "/tmp/objprof-test-" + std::to_string(::getpid()) + ".trace";
  {
    FakeHeap heap(1 << 16);
    ProfilerOptions o;
    o.trace_path = path;
    o.default_leak_printer = false;
    auto p = Profiler::create(std::move(o));
    REQUIRE(p.ok());
    REQUIRE((*p)->add_space(heap.space()).ok());
    ThreadState* t = *(*p)->attach_thread(3, "io");
    for (int i = 0; i < 1000; ++i) (*p)->on_alloc(*t, 0, 0, heap.at(static_cast<std::size_t>(i) * 16), 16);
    REQUIRE((*p)->gc_begin(GcKind::kMinor).ok());
    REQUIRE((*p)->gc_end().ok());
  }  // the destructor finishes the trace
  auto c = trace::load_file(path);
  REQUIRE(c.ok());
  CHECK(c->summary.complete);
  CHECK(c->allocs.size() == 1000);
  CHECK(c->allocs[999].thread == 3);
  std::remove(path.c_str());
  auto bad = Profiler::create([] { ProfilerOptions o; o.trace_path = "/nonexistent-dir/x.trace"; return o; }());
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("/nonexistent-dir/x.trace") != std::string::npos);
}

}  // namespace test_trace
