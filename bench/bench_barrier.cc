// Per-access cost of the access barrier variants, side by side.
//
// Every "access" loads one 8-byte field of a 32-byte object and adds it to a running sum, so
// the "none" variant is a real baseline (the access without any barrier). Object references
// come from a precomputed sequence of object indices (compressed-reference style: obj = heap +
// idx * 32), built outside the timed loop; the same sequence drives every variant of a
// pattern, so the variants differ only in the barrier code. One benchmark iteration is one
// pass over the sequence; ns_per_access = time / accesses.
//
// Variants (compile-time policies of barrier.h):
//   none            access only
//   range           the barrier's range check (obj - begin < size) and nothing else
//   cache_racy      BarrierPolicy<true,  kRacy>            (DefaultBarrier)
//   cache_racy_tf   BarrierPolicy<true,  kRacyTestFirst>
//   cache_atomic    BarrierPolicy<true,  kAtomic>
//   cache_atomic_tf BarrierPolicy<true,  kAtomicTestFirst>
//   cache_buffered  BarrierPolicy<true,  kBuffered>        (pending_marks.h; no mark lost)
//   nocache_racy / nocache_racy_tf / nocache_atomic / nocache_atomic_tf / nocache_buffered
//                   without the cache
//   ref_hitlikely_racy  NOT a library variant: cache_racy with the hit branch marked likely,
//                   the reference for a proposed barrier.h change (see docs/results.md)
//
// Patterns:
//   one        one object, repeated (cache hit on every access after the first)
//   seq        sequential sweep over all objects of a heap; the epoch spans many sweeps, so
//              after the first sweep every bit is already set ("steady state")
//   seq_fresh  the same sweep, but every sweep starts a new epoch (snapshot_and_clear + cache
//              reset, untimed; manual timing of the sweep alone): every access is the first
//              access of its object in the epoch and must set its bit
//   rand       uniformly random objects of a heap (steady state)
//   hit<P>     random objects of a 1 MiB heap where P% of accesses repeat the previous object
//              (cache hit rate P; the measured rate is reported as the hit_rate counter)
// Heaps: 32 KiB (L1d), 1 MiB (L2), 16 MiB, 64 MiB.
#include "support/access_patterns.h"
#include "support/bench_main.h"

#include "objprof/barrier.h"

#include <benchmark/benchmark.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace {

using objprof::AccessBitmap;
using objprof::Address;
using objprof::BarrierDescriptor;
using objprof::BarrierPolicy;
using objprof::HeapSpace;
using objprof::MarkMode;
using objprof::ThreadState;

using objprof::bench::heap_of;
using objprof::bench::kFieldOffset;
using objprof::bench::kObjBytes;
using objprof::bench::kObjShift;
using objprof::bench::Sequence;
using objprof::bench::sequence_of;

// ---- barrier variants -------------------------------------------------------------------

struct NoBarrier {
  OBJPROF_ALWAYS_INLINE static void before(ThreadState&, const BarrierDescriptor&, Address) noexcept {}
};

// The range check of the barrier and nothing else. The empty asm volatile keeps the compare
// and branch alive (it cannot be removed or hoisted out of its condition) at zero cost.
struct RangeOnly {
  OBJPROF_ALWAYS_INLINE static void before(ThreadState&, const BarrierDescriptor& d, Address obj) noexcept {
    if (OBJPROF_LIKELY(obj - d.begin < d.size)) __asm__ volatile("");
  }
};

template <bool Cache, MarkMode Mode>
struct Barrier {
  OBJPROF_ALWAYS_INLINE static void before(ThreadState& t, const BarrierDescriptor& d, Address obj) noexcept {
    objprof::access<BarrierPolicy<Cache, Mode>>(t, d, obj);
  }
};

// Reference for a proposed core change (not the library's code): barrier.h's access<> with
// the cache hit marked OBJPROF_LIKELY, so GCC lays the hit out as the fall-through path and
// the miss (range check + mark) out of line. Racy marking, otherwise identical.
struct HitLikelyRacy {
  OBJPROF_ALWAYS_INLINE static void before(ThreadState& t, const BarrierDescriptor& d, Address obj) noexcept {
    if (OBJPROF_LIKELY(obj == t.cache.load(std::memory_order_relaxed))) return;
    const Address offset = obj - d.begin;
    if (OBJPROF_UNLIKELY(offset >= d.size)) return;
    t.cache.store(obj, std::memory_order_relaxed);
    AccessBitmap::mark_granule<MarkMode::kRacy>(d.bitmap.load(std::memory_order_relaxed), offset >> d.log2_granule);
  }
};

// One pass over the sequence. noinline so that each variant's loop is one function in
// `objdump -d build/bin/bench_barrier` (look for pass<...>).
template <class V>
OBJPROF_NOINLINE std::uint64_t pass(ThreadState& t, const BarrierDescriptor& d, Address heap,
                                    const std::uint32_t* idx, std::size_t n) noexcept {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    Address obj = heap + (Address{idx[i]} << kObjShift);
    // An opaque register copy: the reference is just "a value in a register" to the compiler,
    // as in JIT code. Costs no instruction; stops GCC from vectorising the baseline loop
    // into an emulated gather, which would make "none" an unrealistically cheap baseline.
    __asm__("" : "+r"(obj));
    V::before(t, d, obj);
    std::uint64_t field;
    std::memcpy(&field, reinterpret_cast<const void*>(obj + kFieldOffset), sizeof field);
    sum += field;
  }
  return sum;
}

void set_counters(benchmark::State& state, const Sequence& s) {
  const auto n = static_cast<double>(s.idx.size());
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(s.idx.size()));
  state.counters["ns_per_access"] =
      benchmark::Counter(n, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["hit_rate"] = s.hit_rate;
  state.counters["accesses"] = n;
}

template <class V>
void run_steady(benchmark::State& state, std::size_t heap_bytes, const std::string& pattern, int hit) {
  objprof::bench::BenchHeap& h = heap_of(heap_bytes);
  const Sequence& s = sequence_of(pattern, heap_bytes / kObjBytes, hit);
  ThreadState thread(0, "bench");
  const BarrierDescriptor& d = h.bitmap->descriptor();
  const Address base = reinterpret_cast<Address>(h.base);
  // Warm-up pass: faults in bitmap pages and sets the steady-state bits.
  benchmark::DoNotOptimize(pass<V>(thread, d, base, s.idx.data(), s.idx.size()));
  for (auto _ : state) {
    benchmark::DoNotOptimize(pass<V>(thread, d, base, s.idx.data(), s.idx.size()));
  }
  set_counters(state, s);
}

template <class V>
void run_fresh(benchmark::State& state, std::size_t heap_bytes) {
  objprof::bench::BenchHeap& h = heap_of(heap_bytes);
  const Sequence& s = sequence_of("seq_fresh", heap_bytes / kObjBytes, 0);
  ThreadState thread(0, "bench");
  const BarrierDescriptor& d = h.bitmap->descriptor();
  const Address base = reinterpret_cast<Address>(h.base);
  for (auto _ : state) {
    thread.pending_marks.merge();  // as gc_begin does, before the harvest (untimed, like it)
    {
      auto snap = h.bitmap->snapshot_and_clear();  // new epoch: all bits clear
      if (!snap.ok()) std::abort();
    }  // the retired buffer is cleared here, before the timed sweep
    thread.reset_cache();
    const auto t0 = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(pass<V>(thread, d, base, s.idx.data(), s.idx.size()));
    const auto t1 = std::chrono::steady_clock::now();
    state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
  }
  set_counters(state, s);
}

std::string size_name(std::size_t bytes) {
  return bytes >= (std::size_t{1} << 20) ? std::to_string(bytes >> 20) + "MiB" : std::to_string(bytes >> 10) + "KiB";
}

template <class V>
void add(const std::string& variant, const std::string& pattern, std::size_t heap_bytes, int hit) {
  std::string name = "barrier/" + pattern + "/" + size_name(heap_bytes) + "/" + variant;
  benchmark::internal::Benchmark* b;
  if (pattern == "seq_fresh") {
    b = benchmark::RegisterBenchmark(name.c_str(), [heap_bytes](benchmark::State& st) { run_fresh<V>(st, heap_bytes); });
    b->UseManualTime();
  } else {
    b = benchmark::RegisterBenchmark(name.c_str(), [heap_bytes, pattern, hit](benchmark::State& st) {
      run_steady<V>(st, heap_bytes, pattern, hit);
    });
  }
  b->MinTime(0.06);
}

void add_all_variants(const std::string& pattern, std::size_t heap_bytes, int hit = 0) {
  add<NoBarrier>("none", pattern, heap_bytes, hit);
  add<RangeOnly>("range", pattern, heap_bytes, hit);
  add<Barrier<true, MarkMode::kRacy>>("cache_racy", pattern, heap_bytes, hit);
  add<Barrier<true, MarkMode::kRacyTestFirst>>("cache_racy_tf", pattern, heap_bytes, hit);
  add<Barrier<true, MarkMode::kAtomic>>("cache_atomic", pattern, heap_bytes, hit);
  add<Barrier<true, MarkMode::kAtomicTestFirst>>("cache_atomic_tf", pattern, heap_bytes, hit);
  add<Barrier<true, MarkMode::kBuffered>>("cache_buffered", pattern, heap_bytes, hit);
  add<HitLikelyRacy>("ref_hitlikely_racy", pattern, heap_bytes, hit);
  add<Barrier<false, MarkMode::kRacy>>("nocache_racy", pattern, heap_bytes, hit);
  add<Barrier<false, MarkMode::kRacyTestFirst>>("nocache_racy_tf", pattern, heap_bytes, hit);
  add<Barrier<false, MarkMode::kAtomic>>("nocache_atomic", pattern, heap_bytes, hit);
  add<Barrier<false, MarkMode::kAtomicTestFirst>>("nocache_atomic_tf", pattern, heap_bytes, hit);
  add<Barrier<false, MarkMode::kBuffered>>("nocache_buffered", pattern, heap_bytes, hit);
}

void register_all() {
  const std::size_t KiB = 1024, MiB = 1024 * KiB;
  const std::size_t heaps[] = {32 * KiB, 1 * MiB, 16 * MiB, 64 * MiB};
  add_all_variants("one", 32 * KiB);
  for (std::size_t h : heaps) add_all_variants("seq", h);
  for (std::size_t h : heaps) add_all_variants("seq_fresh", h);
  for (std::size_t h : heaps) add_all_variants("rand", h);
  for (int hit : {0, 75, 98}) add_all_variants("hit" + std::to_string(hit), 1 * MiB, hit);
}

}  // namespace

int main(int argc, char** argv) { return objprof::bench::run_benchmarks(argc, argv, register_all); }
