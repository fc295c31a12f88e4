// A runtime that starts a thread per request attaches and detaches ThreadStates forever: the
// profiler's memory must stay flat, and nothing a detached thread did may be lost.
#include <objprof/profiler.h>

#include "../test_env.h"
#include "test_support.h"

#include <catch2/catch.hpp>

#include <malloc.h>

#include <atomic>
#include <thread>
#include <vector>

namespace test_thread_churn {

#if OBJPROF_TEST_ASAN || OBJPROF_TEST_TSAN
extern "C" std::size_t __sanitizer_get_current_allocated_bytes();
#endif

using namespace objprof;
using objprof::test::FakeHeap;

namespace {

// Bytes the process has allocated with malloc/new and not freed.
std::size_t heap_in_use() {
#if OBJPROF_TEST_ASAN || OBJPROF_TEST_TSAN
  return __sanitizer_get_current_allocated_bytes();
#else
  return mallinfo2().uordblks;
#endif
}

// Counts the trace and keeps none of it, so only the profiler's own memory is measured.
class TraceByteCounter final : public ChunkSink {
 public:
  explicit TraceByteCounter(std::atomic<std::uint64_t>& bytes) : bytes_(bytes) {}
  Status write(std::span<const std::byte> b) override {
    bytes_ += b.size();
    return {};
  }

 private:
  std::atomic<std::uint64_t>& bytes_;
};

}  // namespace

TEST_CASE("Profiler: 100k threads attached and detached over many GCs keep its memory flat", "[core][threads]") {
  constexpr std::uint32_t kWorkers = 4;  // OS threads alive at once
  const std::uint32_t attaches_per_worker = static_cast<std::uint32_t>(objprof::test::scaled(250, 25));
  const std::uint32_t rounds = 100;  // one GC per round
  const std::uint64_t total = std::uint64_t{rounds} * kWorkers * attaches_per_worker;
  constexpr std::uint64_t kSmall = 64, kTracked = 512;  // per attach: one small, one tracked object
  constexpr std::size_t kSlot = kSmall + kTracked;

  FakeHeap heap(kWorkers * attaches_per_worker * kSlot);
  std::atomic<std::uint64_t> trace_bytes{0};
  ProfilerOptions o;
  o.trace_sink = std::make_unique<TraceByteCounter>(trace_bytes);
  o.default_leak_printer = false;
  auto prof = std::move(*Profiler::create(std::move(o)));
  REQUIRE(prof->add_space(heap.space()).ok());
  REQUIRE(prof->define_type({1, "Request", kSmall, false}).ok());
  REQUIRE(prof->define_site({1, 0, "Server.handle", 0}).ok());

  std::size_t baseline = 0;
  for (std::uint32_t round = 0; round < rounds; ++round) {
    std::vector<std::thread> workers;
    for (std::uint32_t w = 0; w < kWorkers; ++w) {
      workers.emplace_back([&, w] {
        for (std::uint32_t k = 0; k < attaches_per_worker; ++k) {
          const std::uint32_t slot = w * attaches_per_worker + k;
          ThreadState* t = *prof->attach_thread(slot, "request");
          prof->on_alloc(*t, 1, 1, heap.at(slot * kSlot), kSmall);
          prof->on_alloc(*t, 1, 1, heap.at(slot * kSlot + kSmall), kTracked);
          access<>(*t, prof->bitmap(0), heap.at(slot * kSlot));
          prof->detach_thread(*t);
        }
      });
    }
    for (auto& th : workers) th.join();
    // Every request's objects die in the GC after it.
    REQUIRE(prof->gc_begin(GcKind::kFull).ok());
    for (std::uint32_t slot = 0; slot < kWorkers * attaches_per_worker; ++slot) {
      prof->on_free(heap.at(slot * kSlot));
      prof->on_free(heap.at(slot * kSlot + kSmall));
    }
    REQUIRE(prof->gc_end().ok());
    if (round == 9) baseline = heap_in_use();  // after every table reached its working size
  }
  const std::size_t grown = heap_in_use() - std::min(heap_in_use(), baseline);
  const ProfilerStats s = prof->stats();
  INFO("heap grew by " << grown << " bytes over " << total << " attaches after the first 10 rounds");
  // A ThreadState with its 64 KiB trace buffer kept per detached thread would be gigabytes.
  CHECK(grown < (std::size_t{1} << 20));
  CHECK(s.threads_attached == 0);
  CHECK(s.threads_detached == total);
  // What the detached threads did is all still counted.
  CHECK(s.objects_allocated == 2 * total);
  CHECK(s.bytes_allocated == total * kSlot);
  CHECK(s.objects_tracked == total);
  CHECK(s.bits_harvested == total);  // each request's access, harvested at its GC
  CHECK(s.tracked_live == 0);
  CHECK(s.frees == 2 * total);
  REQUIRE(prof->finish().ok());
  CHECK(trace_bytes.load() > total * 10);  // every thread's definition, allocs and end reached the trace
}

}  // namespace test_thread_churn
