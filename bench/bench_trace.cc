// Trace writer throughput on one thread: EventBuffer inline appends + chunk framing + CRC32C
// + hand-off to a sink.
//
// Sinks:
//   counting  CountingSink: drops chunks; measures encode + frame + CRC alone
//   memreuse  a bench-local sink that copies each chunk into a preallocated, pre-faulted
//             64 MiB buffer and wraps around: encode + frame + CRC + one memcpy into memory,
//             without page faults or reallocation (what "into memory" should cost)
//   memsink   objprof's MemorySink, drained (timed: the consumer only looks at each segment)
//             whenever it holds 64 MiB, as a runtime that ships its trace elsewhere would: its
//             segments are reused, and reserve() faulted them in before the timing (memreuse's
//             buffer is faulted in likewise), so no page is faulted in on the write path
//   memsink_fresh  the same, but the drained segments are released as well: every byte goes
//             into memory fresh from the kernel, as when the whole trace stays in memory
//             (first-touch page faults included; the kernel's rate, not objprof's, bounds it)
//   file      FileSink on /tmp, 512 MiB per iteration, the file deleted after each iteration
//             (untimed); "file" = write(2) into the page cache, "file_sync" also includes the
//             final fdatasync (flush_sink) so the bytes reached the device
//
// Events: alloc, move, free, and a mix per 4 events of 2 alloc, 1 move, 1 free, written packed
// (trace version 5: alloc 5.5 bytes here, move 3, free 2, mix 4.75 on average; bytes_per_s says
// what was written). One benchmark iteration appends 16384 events (memory sinks).
#include "support/bench_main.h"

#include "objprof/crc32c.h"
#include "objprof/trace_writer.h"

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

using objprof::ChunkSink;
using objprof::EventBuffer;
using objprof::Status;
using objprof::TraceWriter;

// Copies chunks into a fixed, pre-faulted buffer, wrapping around: memory reused, no faults.
class ReusedMemorySink final : public ChunkSink {
 public:
  explicit ReusedMemorySink(std::size_t capacity) : buf_(capacity) {
    std::memset(buf_.data(), 0, buf_.size());  // fault every page in now
  }
  Status write(std::span<const std::byte> bytes) override {
    if (pos_ + bytes.size() > buf_.size()) pos_ = 0;
    std::memcpy(buf_.data() + pos_, bytes.data(), bytes.size());
    pos_ += bytes.size();
    bytes_ += bytes.size();
    return {};
  }
  std::uint64_t bytes() const noexcept { return bytes_; }

 private:
  std::vector<std::byte> buf_;
  std::size_t pos_ = 0;
  std::uint64_t bytes_ = 0;
};

enum class Kind { kAlloc, kMove, kFree, kMix };

constexpr std::uint64_t kHeap = 0x7f0000000000ull;

// Appends `n` events of `kind`, numbered from `first`. Field values vary per event so nothing
// is constant-folded; their arithmetic is part of the measured cost (as in a real allocator).
OBJPROF_ALWAYS_INLINE void append(EventBuffer& b, Kind kind, std::uint64_t first, std::uint64_t n) {
  switch (kind) {
    case Kind::kAlloc:
      for (std::uint64_t i = first; i < first + n; ++i)
        b.alloc(static_cast<std::uint32_t>(i & 255), static_cast<std::uint32_t>(i & 63), kHeap + i * 32, 32);
      break;
    case Kind::kMove:
      for (std::uint64_t i = first; i < first + n; ++i) b.move(kHeap + i * 32, kHeap + (1ull << 32) + i * 32);
      break;
    case Kind::kFree:
      for (std::uint64_t i = first; i < first + n; ++i) b.free(kHeap + i * 32);
      break;
    case Kind::kMix:
      for (std::uint64_t i = first; i < first + n; i += 4) {
        b.alloc(static_cast<std::uint32_t>(i & 255), static_cast<std::uint32_t>(i & 63), kHeap + i * 32, 32);
        b.alloc(static_cast<std::uint32_t>(i & 255), 7, kHeap + i * 32 + 32, 48);
        b.move(kHeap + i * 32 - 4096, kHeap + (1ull << 32) + i * 32);
        b.free(kHeap + i * 32 - 8192);
      }
      break;
  }
}

constexpr std::uint64_t kEventsPerIteration = 16384;
constexpr std::size_t kDrainBytes = std::size_t{64} << 20;  // memsink: drained when it holds more

void set_rates(benchmark::State& state, std::uint64_t events, std::uint64_t bytes) {
  state.counters["events_per_s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["bytes_per_s"] = benchmark::Counter(static_cast<double>(bytes), benchmark::Counter::kIsRate,
                                                     benchmark::Counter::OneK::kIs1024);
  state.counters["ns_per_event"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

template <class Sink>
void run_memory(benchmark::State& state, Kind kind, std::unique_ptr<Sink> owned, bool release = false) {
  Sink* sink = owned.get();
  auto writer = TraceWriter::create(std::move(owned));
  if (!writer.ok()) std::abort();
  auto buffer = (*writer)->make_buffer(objprof::trace::kThreadStreamBase);
  std::uint64_t next = 0;
  if constexpr (std::is_same_v<Sink, objprof::MemorySink>) {
    // Fault in the memory it cycles through, as memreuse does: reserve(), out of the timing.
    if (!release) sink->reserve(kDrainBytes + objprof::MemorySink::kDefaultSegmentBytes);
  }
  append(*buffer, kind, next, 1 << 16);  // warm-up: buffers and sink memory touched
  next += 1 << 16;
  const std::uint64_t bytes0 = (*writer)->bytes_written();
  for (auto _ : state) {
    append(*buffer, kind, next, kEventsPerIteration);
    next += kEventsPerIteration;
    if constexpr (std::is_same_v<Sink, objprof::MemorySink>) {
      if (sink->size() > kDrainBytes) {
        sink->drain([](std::span<const std::byte> s) { benchmark::DoNotOptimize(s.data()); });
        if (release) sink->release();
      }
    }
    benchmark::ClobberMemory();
  }
  buffer->flush();
  const std::uint64_t events = static_cast<std::uint64_t>(state.iterations()) * kEventsPerIteration;
  set_rates(state, events, (*writer)->bytes_written() - bytes0);
}

void run_file(benchmark::State& state, Kind kind, bool sync) {
  const std::uint64_t target = std::uint64_t{512} << 20;
  const std::string path = "/tmp/objprof_bench_trace_" + std::to_string(::getpid()) + ".trc";
  std::uint64_t events = 0, bytes = 0;
  for (auto _ : state) {
    auto sink = objprof::FileSink::create(path);
    if (!sink.ok()) {
      state.SkipWithError(sink.error().message.c_str());
      break;
    }
    auto writer = TraceWriter::create(std::move(*sink));
    if (!writer.ok()) std::abort();
    auto buffer = (*writer)->make_buffer(objprof::trace::kThreadStreamBase);
    std::uint64_t next = 0;
    while ((*writer)->bytes_written() < target) {
      append(*buffer, kind, next, kEventsPerIteration);
      next += kEventsPerIteration;
    }
    buffer->flush();
    if (sync && !(*writer)->flush_sink().ok()) std::abort();
    events += next;
    bytes += (*writer)->bytes_written();
    state.PauseTiming();
    buffer.reset();
    writer->reset();  // closes the file
    ::unlink(path.c_str());
    state.ResumeTiming();
  }
  set_rates(state, events, bytes);
}

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::kAlloc: return "alloc";
    case Kind::kMove: return "move";
    case Kind::kFree: return "free";
    case Kind::kMix: return "mix";
  }
  return "?";
}

// CRC32C alone over a 64 KiB chunk: the framing cost's lower bound.
void BM_Crc32c64K(benchmark::State& state, objprof::Crc32cPath path) {
  std::vector<std::uint8_t> buf(64 << 10);
  for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<std::uint8_t>(i * 131);
  std::uint32_t crc = 0;
  for (auto _ : state) {
    crc = objprof::crc32c_with(path, buf.data(), buf.size(), crc);
    benchmark::DoNotOptimize(crc);
  }
  state.counters["bytes_per_s"] = benchmark::Counter(static_cast<double>(buf.size()),
                                                     benchmark::Counter::kIsIterationInvariantRate,
                                                     benchmark::Counter::OneK::kIs1024);
}

// Reference for a proposed core change (not the library's code): the same crc32 instruction
// over three independent thirds of the chunk, so three crc32q are in flight instead of one
// dependent chain (3-cycle latency, 1/cycle throughput). Combining the three CRCs (a carry-
// less multiply by x^(8*len) mod P per stream, pclmulqdq) costs a few ns per chunk and is
// omitted here: this measures the instruction throughput the interleaved loop reaches.
#if defined(__x86_64__)
__attribute__((target("sse4.2"))) std::uint64_t crc3_ref(const std::uint8_t* p, std::size_t n) {
  const std::size_t third = n / 24 * 8;
  std::uint64_t a = ~0u, b = ~0u, c = ~0u;
  for (std::size_t i = 0; i < third; i += 8) {
    std::uint64_t x, y, z;
    std::memcpy(&x, p + i, 8);
    std::memcpy(&y, p + third + i, 8);
    std::memcpy(&z, p + 2 * third + i, 8);
    a = __builtin_ia32_crc32di(a, x);
    b = __builtin_ia32_crc32di(b, y);
    c = __builtin_ia32_crc32di(c, z);
  }
  return a ^ (b << 1) ^ (c << 2);
}

void BM_Crc32c3WayRef64K(benchmark::State& state) {
  std::vector<std::uint8_t> buf(64 << 10);
  for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<std::uint8_t>(i * 131);
  for (auto _ : state) benchmark::DoNotOptimize(crc3_ref(buf.data(), buf.size()));
  state.counters["bytes_per_s"] = benchmark::Counter(static_cast<double>(buf.size()),
                                                     benchmark::Counter::kIsIterationInvariantRate,
                                                     benchmark::Counter::OneK::kIs1024);
}
#endif

void register_all() {
  // Each path this CPU runs (crc32c.h); the trace uses crc32c_path().
  for (objprof::Crc32cPath p : objprof::kAllCrc32cPaths) {
    if (!objprof::crc32c_supported(p)) continue;
    benchmark::RegisterBenchmark(("trace/crc32c_64KiB/" + std::string(objprof::crc32c_path_name(p))).c_str(),
                                 [p](benchmark::State& s) { BM_Crc32c64K(s, p); })
        ->MinTime(0.2);
  }
#if defined(__x86_64__)
  benchmark::RegisterBenchmark("trace/ref_crc32c_3way_64KiB", BM_Crc32c3WayRef64K)->MinTime(0.2);
#endif
  for (Kind k : {Kind::kAlloc, Kind::kMove, Kind::kFree, Kind::kMix}) {
    const std::string ev = kind_name(k);
    benchmark::RegisterBenchmark(("trace/counting/" + ev).c_str(), [k](benchmark::State& s) {
      run_memory(s, k, std::make_unique<objprof::CountingSink>());
    })->MinTime(0.2);
    benchmark::RegisterBenchmark(("trace/memreuse/" + ev).c_str(), [k](benchmark::State& s) {
      run_memory(s, k, std::make_unique<ReusedMemorySink>(std::size_t{64} << 20));
    })->MinTime(0.2);
    benchmark::RegisterBenchmark(("trace/memsink/" + ev).c_str(), [k](benchmark::State& s) {
      run_memory(s, k, std::make_unique<objprof::MemorySink>());
    })->MinTime(0.2);
    benchmark::RegisterBenchmark(("trace/memsink_fresh/" + ev).c_str(), [k](benchmark::State& s) {
      run_memory(s, k, std::make_unique<objprof::MemorySink>(), true);
    })->MinTime(0.2);
  }
  for (Kind k : {Kind::kAlloc, Kind::kMix}) {
    const std::string ev = kind_name(k);
    benchmark::RegisterBenchmark(("trace/file/" + ev).c_str(), [k](benchmark::State& s) { run_file(s, k, false); })
        ->Iterations(2)
        ->UseRealTime();
  }
  benchmark::RegisterBenchmark("trace/file_sync/alloc", [](benchmark::State& s) { run_file(s, Kind::kAlloc, true); })
      ->Iterations(2)
      ->UseRealTime();
}

}  // namespace

int main(int argc, char** argv) { return objprof::bench::run_benchmarks(argc, argv, register_all); }
