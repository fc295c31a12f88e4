// AccessBitmap::snapshot_and_clear at a 16 MiB and a 1 GiB heap (K = 8: 256 KiB and 16 MiB
// bitmaps). The heap range is only an address range here: the bitmap never touches the heap.
//
//   bitmap/swap/<heap>         the call snapshot_and_clear() alone (pool pop + the pointer
//                              exchange + building the snapshot): what the collector spends
//                              before mutators mark into the new buffer. Timed per call with
//                              steady_clock (manual time); the snapshot is released untimed.
//   bitmap/clock_overhead      two back-to-back steady_clock reads: subtract from "swap"
//   bitmap/scan/<heap>         BitmapSnapshot::count() over the whole snapshot (gc_begin does
//                              this for every space)
//   bitmap/release/<heap>      destroying the snapshot: clear the retired buffer and return
//                              it to the pool (memset below 4 MiB, madvise(DONTNEED) above)
//   bitmap/scan_release/<heap> both: the copy/clear work, in bitmap bytes per second
//   bitmap/remark/<heap>       after swap + release, one mark per 4 KiB page of the new
//                              buffer (i.e. every 256 KiB of heap): the first-touch cost the
//                              mutators pay later if the clear was done by madvise
// Before each timed step the active buffer is filled with 0x11 bytes (2 of 8 bits set: every
// 32-byte object of the heap accessed), untimed.
#include "support/bench_main.h"

#include "objprof/access_bitmap.h"

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace {

using objprof::AccessBitmap;
using objprof::Address;
using objprof::HeapSpace;
using objprof::MarkMode;
using Clock = std::chrono::steady_clock;

std::unique_ptr<AccessBitmap> make_bitmap(std::uint64_t heap_bytes) {
  const Address begin = Address{1} << 40;  // never dereferenced
  auto space = HeapSpace::make(begin, begin + heap_bytes, 8, "bench");
  if (!space.ok()) std::abort();
  auto bm = AccessBitmap::create(*space);
  if (!bm.ok()) std::abort();
  return std::move(*bm);
}

// Marks as mutators would have by the end of an epoch (every 32-byte object accessed).
void dirty(AccessBitmap& bm) {
  std::memset(bm.descriptor().bitmap.load(std::memory_order_relaxed), 0x11, bm.size_bytes());
}

double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

void set_bytes(benchmark::State& state, const AccessBitmap& bm) {
  state.counters["bitmap_bytes"] = static_cast<double>(bm.size_bytes());
  state.counters["bytes_per_s"] =
      benchmark::Counter(static_cast<double>(bm.size_bytes()), benchmark::Counter::kIsIterationInvariantRate,
                         benchmark::Counter::OneK::kIs1024);
}

void BM_Swap(benchmark::State& state, std::uint64_t heap) {
  auto bm = make_bitmap(heap);
  dirty(*bm);
  { auto warm = bm->snapshot_and_clear(); }
  for (auto _ : state) {
    const auto t0 = Clock::now();
    auto snap = bm->snapshot_and_clear();
    const auto t1 = Clock::now();
    state.SetIterationTime(seconds(t0, t1));
    if (!snap.ok()) std::abort();
    // `snap` is released at the end of the iteration: untimed, outside [t0, t1].
  }
  state.counters["bitmap_bytes"] = static_cast<double>(bm->size_bytes());
}

void BM_ClockOverhead(benchmark::State& state) {
  for (auto _ : state) {
    const auto t0 = Clock::now();
    const auto t1 = Clock::now();
    state.SetIterationTime(seconds(t0, t1));
  }
}

enum class Work { kScan, kRelease, kScanRelease, kRefPopcntScan, kRefMemsetRelease };

// References for proposed core changes (not the library's code):
//   ref_popcnt_scan: BitmapSnapshot::count()'s loop compiled with the popcnt instruction
//     (the library is built for baseline x86-64, so std::popcount becomes a call to libgcc's
//     __popcountdi2 per word); dispatch on CPUID as crc32c.cc does
//   ref_memset_release: the snapshot scan's buffer cleared with memset instead of
//     madvise(MADV_DONTNEED) (bench-local buffer of the same size, kept resident)
#if defined(__x86_64__)
__attribute__((target("popcnt"))) std::uint64_t popcnt_count(const std::uint8_t* p, std::size_t n) {
  std::uint64_t c = 0;
  for (std::size_t w = 0; w < n / 8; ++w) {
    std::uint64_t word;
    std::memcpy(&word, p + w * 8, 8);
    c += static_cast<std::uint64_t>(__builtin_popcountll(word));
  }
  return c;
}
#else
std::uint64_t popcnt_count(const std::uint8_t* p, std::size_t n) {
  std::uint64_t c = 0;
  for (std::size_t i = 0; i < n; ++i) c += static_cast<std::uint64_t>(__builtin_popcount(p[i]));
  return c;
}
#endif

void BM_Work(benchmark::State& state, std::uint64_t heap, Work work) {
  auto bm = make_bitmap(heap);
  for (auto _ : state) {
    dirty(*bm);
    auto snap = bm->snapshot_and_clear();
    if (!snap.ok()) std::abort();
    std::optional<objprof::BitmapSnapshot> held(std::move(*snap));
    if (work == Work::kRefPopcntScan) {
      const auto bytes = held->bytes();
      const auto t0 = Clock::now();
      benchmark::DoNotOptimize(popcnt_count(bytes.data(), bytes.size()));
      const auto t1 = Clock::now();
      state.SetIterationTime(seconds(t0, t1));
      continue;
    }
    if (work == Work::kRefMemsetRelease) {
      static std::vector<std::uint8_t> resident;
      resident.assign(bm->size_bytes(), 0x11);
      const auto t0 = Clock::now();
      std::memset(resident.data(), 0, resident.size());
      benchmark::ClobberMemory();
      const auto t1 = Clock::now();
      state.SetIterationTime(seconds(t0, t1));
      continue;
    }
    const auto t0 = Clock::now();
    if (work != Work::kRelease) benchmark::DoNotOptimize(held->count());
    if (work != Work::kScan) held.reset();
    const auto t1 = Clock::now();
    state.SetIterationTime(seconds(t0, t1));
    held.reset();  // kScan: released untimed
  }
  set_bytes(state, *bm);
}

// First marks into a buffer that was just cleared: page faults if it was cleared by madvise.
void BM_Remark(benchmark::State& state, std::uint64_t heap) {
  auto bm = make_bitmap(heap);
  const std::uint64_t granules_per_page = 4096 * 8;  // one bitmap page covers 32768 granules
  const Address begin = bm->space().begin();
  std::uint64_t pages = 0;
  for (auto _ : state) {
    dirty(*bm);
    { auto snap = bm->snapshot_and_clear(); }  // swap and release: the new active buffer is clear
    dirty(*bm);                                  // touch it, as the mutators of that epoch did
    { auto snap = bm->snapshot_and_clear(); }  // the released buffer is active again
    const auto t0 = Clock::now();
    for (std::uint64_t g = 0; g < bm->space().granule_count(); g += granules_per_page)
      bm->mark<MarkMode::kRacy>(begin + (g << 3));
    const auto t1 = Clock::now();
    state.SetIterationTime(seconds(t0, t1));
    pages = bm->space().granule_count() / granules_per_page;
  }
  state.counters["pages"] = static_cast<double>(pages);
  state.counters["ns_per_page"] = benchmark::Counter(static_cast<double>(pages),
                                                     benchmark::Counter::kIsIterationInvariantRate |
                                                         benchmark::Counter::kInvert);
}

std::string heap_name(std::uint64_t heap) {
  return heap >= (std::uint64_t{1} << 30) ? std::to_string(heap >> 30) + "GiB" : std::to_string(heap >> 20) + "MiB";
}

void register_all() {
  const std::uint64_t heaps[] = {std::uint64_t{16} << 20, std::uint64_t{1} << 30};
  benchmark::RegisterBenchmark("bitmap/clock_overhead", BM_ClockOverhead)->UseManualTime()->MinTime(0.2);
  for (auto h : heaps)
    benchmark::RegisterBenchmark(("bitmap/swap/" + heap_name(h)).c_str(), [h](benchmark::State& s) { BM_Swap(s, h); })
        ->UseManualTime()
        ->MinTime(0.2);
  const std::pair<const char*, Work> works[] = {
      {"scan", Work::kScan}, {"release", Work::kRelease}, {"scan_release", Work::kScanRelease},
      {"ref_popcnt_scan", Work::kRefPopcntScan}, {"ref_memset_release", Work::kRefMemsetRelease}};
  for (auto [name, w] : works)
    for (auto h : heaps)
      benchmark::RegisterBenchmark((std::string("bitmap/") + name + "/" + heap_name(h)).c_str(),
                                   [h, w](benchmark::State& s) { BM_Work(s, h, w); })
          ->UseManualTime()
          ->MinTime(0.2);
  for (auto h : heaps)
    benchmark::RegisterBenchmark(("bitmap/remark/" + heap_name(h)).c_str(), [h](benchmark::State& s) { BM_Remark(s, h); })
        ->UseManualTime()
        ->MinTime(0.2);
}

}  // namespace

int main(int argc, char** argv) { return objprof::bench::run_benchmarks(argc, argv, register_all); }
