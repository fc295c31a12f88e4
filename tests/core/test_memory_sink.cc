// MemorySink: bytes kept across segments exactly as written, memory kept across emptying, and
// a whole trace written through segments small enough that every chunk straddles two.
#include "test_support.h"

#include <objprof/trace_reader.h>
#include <objprof/trace_sink.h>
#include <objprof/profiler.h>

#include <random>
#include <vector>

namespace test_memory_sink {

using namespace objprof;

namespace {

std::vector<std::byte> random_bytes(std::mt19937_64& rng, std::size_t n) {
  std::vector<std::byte> v(n);
  for (auto& b : v) b = static_cast<std::byte>(rng());
  return v;
}

// Writes pieces of random sizes (some longer than a segment) and returns what was written.
std::vector<std::byte> fill(MemorySink& sink, std::mt19937_64& rng, std::size_t total) {
  std::vector<std::byte> expected;
  while (expected.size() < total) {
    const std::size_t n = std::uniform_int_distribution<std::size_t>(0, 3 * 4096)(rng);
    const std::vector<std::byte> piece = random_bytes(rng, n);
    REQUIRE(sink.write(piece).ok());
    expected.insert(expected.end(), piece.begin(), piece.end());
  }
  return expected;
}

bool equal(std::span<const std::byte> a, std::span<const std::byte> b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
}

}  // namespace

TEST_CASE("MemorySink keeps the bytes in order across segments", "[core][trace][sink]") {
  std::mt19937_64 rng(11);
  MemorySink sink(4096);
  CHECK(sink.data().empty());
  const std::vector<std::byte> expected = fill(sink, rng, 100'000);
  CHECK(sink.size() == expected.size());
  CHECK(equal(sink.data(), expected));
  CHECK(equal(sink.data(), expected));  // the joined view is reused

  // A write after data() shows up in the next view.
  const std::vector<std::byte> tail = random_bytes(rng, 5000);
  REQUIRE(sink.write(tail).ok());
  std::vector<std::byte> all = expected;
  all.insert(all.end(), tail.begin(), tail.end());
  CHECK(equal(sink.data(), all));

  // drain hands out the segments in order, whole but the last.
  std::vector<std::byte> drained;
  std::size_t pieces = 0;
  sink.drain([&](std::span<const std::byte> s) {
    ++pieces;
    drained.insert(drained.end(), s.begin(), s.end());
  });
  CHECK(pieces == (all.size() + 4095) / 4096);
  CHECK(drained == all);
  CHECK(sink.size() == 0);
  CHECK(sink.data().empty());
}

TEST_CASE("MemorySink keeps its memory when emptied, reserve faults it in ahead, release frees it",
          "[core][trace][sink]") {
  std::mt19937_64 rng(12);
  MemorySink sink(4096);
  const std::vector<std::byte> first = fill(sink, rng, 50'000);
  const std::size_t held = sink.capacity();
  CHECK(held >= first.size());
  CHECK(sink.take() == first);
  CHECK(sink.size() == 0);
  CHECK(sink.capacity() == held);  // take() kept the segments

  // The same amount again fits in the memory already held.
  const std::vector<std::byte> second = fill(sink, rng, held - 3 * 4096);
  CHECK(sink.capacity() == held);
  CHECK(equal(sink.data(), second));
  sink.clear();
  CHECK(sink.capacity() == held);

  sink.reserve(held + 100'000);
  const std::size_t reserved = sink.capacity();
  CHECK(reserved >= held + 100'000);
  const std::vector<std::byte> third = fill(sink, rng, held + 90'000);
  CHECK(sink.capacity() == reserved);  // no segment allocated on the write path
  CHECK(equal(sink.data(), third));

  sink.release();  // only the spare segments go
  CHECK(sink.capacity() == (third.size() + 4095) / 4096 * 4096);
  CHECK(equal(sink.data(), third));
  sink.clear();
  sink.release();
  CHECK(sink.capacity() == 0);
}

TEST_CASE("A trace written into small segments loads and its chunks verify", "[core][trace][sink]") {
  objprof::test::FakeHeap heap(1 << 20);
  auto owned = std::make_unique<MemorySink>(4096);
  MemorySink* sink = owned.get();
  ProfilerOptions o;
  o.trace_sink = std::move(owned);
  o.default_leak_printer = false;
  auto prof = Profiler::create(std::move(o));
  REQUIRE(prof.ok());
  REQUIRE((*prof)->add_space(heap.space()).ok());
  ThreadState* t = *(*prof)->attach_thread(1, "main");
  constexpr std::uint64_t kEvents = 20'000;
  for (std::uint64_t i = 0; i < kEvents; ++i)
    (*prof)->on_alloc(*t, static_cast<std::uint32_t>(i % 7), 3, heap.at(i * 32 % (1 << 20)), 32);
  REQUIRE((*prof)->gc_begin(GcKind::kFull).ok());
  REQUIRE((*prof)->gc_end().ok());
  REQUIRE((*prof)->finish().ok());
  CHECK(sink->size() > 10 * 4096);  // chunks straddle segments
  auto contents = trace::load(sink->data());
  INFO((contents.ok() ? std::string() : contents.error().message));
  REQUIRE(contents.ok());
  REQUIRE(contents->allocs.size() == kEvents);
  CHECK(contents->allocs.back().addr == heap.at((kEvents - 1) * 32 % (1 << 20)));
}

}  // namespace test_memory_sink
