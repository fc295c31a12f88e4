// Emitted barriers (backends/) next to the inline C++ barrier, per access, in one run.
//
// The loop is bench_barrier's: every access turns a 32-bit object index into a reference
// (heap + idx * 32), runs the barrier, then loads the object's 8-byte field and adds it to a
// sum, so "none" is a real baseline. The C++ loops are pass<V> compiled by GCC; the emitted
// loops are the same loop written with asmjit around emit_access_barrier (thread in r15 / x19,
// pinned cache in r14 / x21, descriptor in a register), so the two sides differ only in who
// wrote the barrier. ns_per_access = time / accesses.
//
// Patterns (all-hits, sequential distinct objects, random):
//   one/32KiB        one object repeated: every access after the first is a cache hit
//   seq/1MiB         a sweep over all objects; bits already set (steady state)
//   seq_fresh/1MiB   the sweep, every pass a new epoch (snapshot_and_clear + cache reset,
//                    untimed; the sweep's thread CPU time is the manual time): every access
//                    sets its bit
//   rand/1MiB, rand/16MiB  uniformly random objects (steady state)
// Variants: jit-nobarrier (the emitted loop without a barrier), jit-<cache>-<mark>-<bounds>
// for the emitted barriers (cache nocache/field/pinned, mark racy/rtf/atomic/tf: rtf and tf
// the racy and the atomic mark tested first,
// bounds imm/desc; counters off), jit-field-racy-desc-rangefirst (the seed's order),
// jit-<cache>-<mark>-desc-ool (the out-of-line form: a hit falls through, the miss path sits
// after the loop's return), and cpp-nobarrier / cpp-<cache>-<mark> for
// access<BarrierPolicy<..>> inline.
//
// Ratios compare CPU time (the machine is shared). After the run it prints ratio tables
// (emitted vs jit-nobarrier, inline vs cpp-nobarrier; steady patterns, then seq_fresh) and the
// static barrier instruction counts per access of every emitted variant on x86_64 and arm64
// (backends/barrier_paths.h), weighted by each pattern's outcome mix.
#include "backends/barrier_emitter.h"
#include "backends/barrier_paths.h"
#include "support/access_patterns.h"
#include "support/bench_main.h"
#include "support/cpu_time.h"

#include "objprof/barrier.h"

#if defined(__aarch64__)
#include <asmjit/arm/a64assembler.h>
#endif

#include <benchmark/benchmark.h>
#include <sys/mman.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using namespace objprof;
using namespace objprof::backends;

using bench::heap_of;
using bench::kFieldOffset;
using bench::kObjBytes;
using bench::kObjShift;
using Heap = bench::BenchHeap;

// The "one" pattern's length: each pass is one call of a generated loop.
constexpr std::size_t kOneLength = 65536;

const std::vector<std::uint32_t>& sequence_of(const std::string& pattern, std::size_t objects) {
  return objprof::bench::sequence_of(pattern, objects, 0, kOneLength).idx;
}

// ---- the two kinds of loop ----------------------------------------------------------------

using LoopFn = std::uint64_t (*)(ThreadState*, const BarrierDescriptor*, Address heap, const std::uint32_t* idx,
                                 std::size_t n);

template <class Policy>
OBJPROF_NOINLINE std::uint64_t cpp_pass(ThreadState* t, const BarrierDescriptor* d, Address heap,
                                        const std::uint32_t* idx, std::size_t n) noexcept {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    Address obj = heap + (Address{idx[i]} << kObjShift);
    __asm__("" : "+r"(obj));  // a reference in a register, as in JIT code (see bench_barrier)
    if constexpr (!std::is_void_v<Policy>) access<Policy>(*t, *d, obj);
    std::uint64_t field;
    std::memcpy(&field, reinterpret_cast<const void*>(obj + kFieldOffset), sizeof field);
    sum += field;
  }
  return sum;
}

asmjit::JitRuntime& runtime() {
  static asmjit::JitRuntime rt;
  return rt;
}

// The emitted loop; cfg == nullptr: no barrier. The descriptor's bounds are baked in when
// cfg->bounds is kImmediate, so the loop is compiled per heap. `ool`: the out-of-line form,
// the miss path after the return.
LoopFn compile_loop(const EmitterConfig* cfg, const BarrierDescriptor& desc, bool ool) {
  asmjit::CodeHolder code;
  code.init(runtime().environment());
  const bool pinned = cfg != nullptr && cfg->cache == CacheLocation::kPinnedRegister;
#if defined(__x86_64__)
  namespace x86 = asmjit::x86;
  x86::Assembler a(&code);
  // rdi thread, rsi desc, rdx heap, rcx idx, r8 n; sum in r9; object in rbx.
  X86BarrierRegs regs = X86BarrierRegs::sysv(x86::rbx);
  regs.desc = x86::rsi;
  a.push(x86::r15);
  a.push(x86::r14);
  a.push(x86::rbx);
  a.mov(x86::r15, x86::rdi);
  if (pinned && !emit_load_pinned_cache(a, *cfg, regs)) std::abort();
  a.xor_(x86::r9d, x86::r9d);
  const asmjit::Label top = a.newLabel(), end = a.newLabel();
  a.test(x86::r8, x86::r8);
  a.jz(end);
  a.align(asmjit::AlignMode::kCode, 16);
  a.bind(top);
  a.mov(x86::ebx, x86::dword_ptr(x86::rcx));
  a.shl(x86::rbx, kObjShift);
  a.add(x86::rbx, x86::rdx);
  const asmjit::Label slow = a.newLabel(), resume = a.newLabel();
  if (cfg != nullptr && ool) {
    if (!emit_access_barrier_fast(a, *cfg, desc, regs, slow)) std::abort();
    a.bind(resume);
  } else if (cfg != nullptr && !emit_access_barrier(a, *cfg, desc, regs)) {
    std::abort();
  }
  a.add(x86::r9, x86::qword_ptr(x86::rbx, kFieldOffset));
  a.add(x86::rcx, 4);
  a.dec(x86::r8);
  a.jnz(top);
  a.bind(end);
  if (pinned && !emit_store_pinned_cache(a, *cfg, regs)) std::abort();
  a.mov(x86::rax, x86::r9);
  a.pop(x86::rbx);
  a.pop(x86::r14);
  a.pop(x86::r15);
  a.ret();
  if (cfg != nullptr && ool && !emit_access_barrier_slow(a, *cfg, desc, regs, slow, resume)) std::abort();
#elif defined(__aarch64__)
  namespace a64 = asmjit::a64;
  using asmjit::arm::ptr;
  a64::Assembler a(&code);
  // x0 thread, x1 desc, x2 heap, x3 idx, x4 n; sum in x5; object in x6.
  A64BarrierRegs regs = A64BarrierRegs::art(a64::x6);
  regs.desc = a64::x1;
  a.stp(a64::x19, a64::x21, asmjit::arm::ptr_pre(a64::sp, -16));
  a.mov(a64::x19, a64::x0);
  if (pinned && !emit_load_pinned_cache(a, *cfg, regs)) std::abort();
  a.mov(a64::x5, a64::xzr);
  const asmjit::Label top = a.newLabel(), end = a.newLabel();
  a.cbz(a64::x4, end);
  a.bind(top);
  a.ldr(a64::w6, asmjit::arm::ptr_post(a64::x3, 4));
  a.add(a64::x6, a64::x2, a64::x6, asmjit::arm::lsl(kObjShift));
  const asmjit::Label slow = a.newLabel(), resume = a.newLabel();
  if (cfg != nullptr && ool) {
    if (!emit_access_barrier_fast(a, *cfg, desc, regs, slow)) std::abort();
    a.bind(resume);
  } else if (cfg != nullptr && !emit_access_barrier(a, *cfg, desc, regs)) {
    std::abort();
  }
  a.ldr(a64::x7, ptr(a64::x6, kFieldOffset));
  a.add(a64::x5, a64::x5, a64::x7);
  a.subs(a64::x4, a64::x4, asmjit::Imm(1));
  a.b_ne(top);
  a.bind(end);
  if (pinned && !emit_store_pinned_cache(a, *cfg, regs)) std::abort();
  a.mov(a64::x0, a64::x5);
  a.ldp(a64::x19, a64::x21, asmjit::arm::ptr_post(a64::sp, 16));
  a.ret(a64::x30);
  if (cfg != nullptr && ool && !emit_access_barrier_slow(a, *cfg, desc, regs, slow, resume)) std::abort();
#else
  (void)desc, (void)pinned, (void)ool;
  std::fprintf(stderr, "bench_emitted_barrier: emitted loops run only on x86_64 and arm64\n");
  std::abort();
#endif
  LoopFn fn = nullptr;
  if (runtime().add(&fn, &code) != asmjit::kErrorOk) std::abort();
  return fn;
}

// ---- benchmarks ----------------------------------------------------------------------------

void set_counters(benchmark::State& state, std::size_t n) {
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(n));
  state.counters["ns_per_access"] =
      benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// get_fn(heap) -> LoopFn, called once per benchmark (outside timing).
template <class GetFn>
void run(benchmark::State& state, const std::string& pattern, std::size_t heap_bytes, GetFn get_fn) {
  Heap& h = heap_of(heap_bytes);
  const std::vector<std::uint32_t>& idx = sequence_of(pattern, heap_bytes / kObjBytes);
  const LoopFn fn = get_fn(h);
  ThreadState thread(0, "bench");
  const BarrierDescriptor* d = &h.bitmap->descriptor();
  const Address base = reinterpret_cast<Address>(h.base);
  if (pattern == "seq_fresh") {
    for (auto _ : state) {
      {
        auto snap = h.bitmap->snapshot_and_clear();
        if (!snap.ok()) std::abort();
      }
      thread.reset_cache();
      // Thread CPU time of the sweep alone: on a shared machine wall time would include
      // preemptions (the steady patterns are compared on CPU time too).
      const double t0 = objprof::bench::cpu_seconds(CLOCK_THREAD_CPUTIME_ID);
      benchmark::DoNotOptimize(fn(&thread, d, base, idx.data(), idx.size()));
      state.SetIterationTime(objprof::bench::cpu_seconds(CLOCK_THREAD_CPUTIME_ID) - t0);
    }
  } else {
    benchmark::DoNotOptimize(fn(&thread, d, base, idx.data(), idx.size()));  // warm-up: steady state
    for (auto _ : state) benchmark::DoNotOptimize(fn(&thread, d, base, idx.data(), idx.size()));
  }
  set_counters(state, idx.size());
}

struct Pattern {
  const char* name;
  std::size_t heap;
};
constexpr std::size_t KiB = 1024, MiB = 1024 * KiB;
const Pattern kPatterns[] = {{"one", 32 * KiB}, {"seq", 1 * MiB}, {"seq_fresh", 1 * MiB}, {"rand", 1 * MiB}, {"rand", 16 * MiB}};

std::string group_name(const Pattern& p) {
  return std::string(p.name) + "-" + (p.heap >= MiB ? std::to_string(p.heap / MiB) + "MiB" : std::to_string(p.heap / KiB) + "KiB");
}

struct Measured {
  EmitterConfig cfg;
  bool ool = false;  // out-of-line form
};

// The emitted variants measured: every cache x mark x bounds without counters, the seed's
// order for the default variant, and the out-of-line form of the cached variants with
// descriptor bounds.
std::vector<Measured> measured_variants() {
  std::vector<Measured> out;
  for (const EmitterConfig& cfg : all_emitter_configs()) {
    if (cfg.count) continue;
    if (!cfg.range_first || (cfg.cache == CacheLocation::kThreadField && cfg.mark == MarkMode::kRacy &&
                             cfg.bounds == BoundsSource::kDescriptor))
      out.push_back({cfg, false});
    if (cfg.uses_cache() && !cfg.range_first && cfg.bounds == BoundsSource::kDescriptor) out.push_back({cfg, true});
  }
  return out;
}

std::string rung_name(const Measured& m) {
  const EmitterConfig& cfg = m.cfg;
  std::string s = "jit-" + cfg.name();
  for (char& c : s)
    if (c == '/') c = '-';
  if (s.rfind("jit-none-", 0) == 0) s.replace(0, 9, "jit-nocache-");
  if (auto p = s.find("atomic-test-first"); p != std::string::npos) s.replace(p, 17, "tf");
  if (auto p = s.find("racy-test-first"); p != std::string::npos) s.replace(p, 15, "rtf");
  if (auto p = s.find("range-first"); p != std::string::npos) s.replace(p, 11, "rangefirst");
  if (m.ool) s += "-ool";
  return s;
}

void add(const Pattern& p, const std::string& rung, std::function<LoopFn(Heap&)> get) {
  // seq_fresh is timed by hand (manual time), the others by Google Benchmark's CPU time: two
  // prefixes, so each ratio table compares like with like.
  const std::string prefix = std::string(p.name) == "seq_fresh" ? "fresh" : "emitted";
  const std::string name = prefix + "/" + group_name(p) + "/" + rung;
  const std::string pattern = p.name;
  const std::size_t heap = p.heap;
  auto* b = benchmark::RegisterBenchmark(name.c_str(), [pattern, heap, get](benchmark::State& st) { run(st, pattern, heap, get); });
  b->MinTime(0.05);
  if (pattern == "seq_fresh") b->UseManualTime();
}

template <class Policy>
void add_cpp(const Pattern& p, const std::string& rung) {
  add(p, rung, [](Heap&) -> LoopFn { return &cpp_pass<Policy>; });
}

std::vector<std::string> emitted_rungs() {
  std::vector<std::string> r{"jit-nobarrier"};
  for (const Measured& m : measured_variants()) r.push_back(rung_name(m));
  return r;
}

const std::vector<std::string> kInlineRungs = {"cpp-nobarrier",    "cpp-field-racy",     "cpp-field-rtf",
                                               "cpp-field-atomic", "cpp-field-tf",       "cpp-nocache-racy",
                                               "cpp-nocache-rtf",  "cpp-nocache-atomic", "cpp-nocache-tf"};

void register_all() {
  for (const Pattern& p : kPatterns) {
    add(p, "jit-nobarrier", [](Heap& h) { return compile_loop(nullptr, h.bitmap->descriptor(), false); });
    for (const Measured& m : measured_variants())
      add(p, rung_name(m), [m](Heap& h) { return compile_loop(&m.cfg, h.bitmap->descriptor(), m.ool); });
    add_cpp<void>(p, "cpp-nobarrier");
    add_cpp<BarrierPolicy<true, MarkMode::kRacy>>(p, "cpp-field-racy");
    add_cpp<BarrierPolicy<true, MarkMode::kRacyTestFirst>>(p, "cpp-field-rtf");
    add_cpp<BarrierPolicy<true, MarkMode::kAtomic>>(p, "cpp-field-atomic");
    add_cpp<BarrierPolicy<true, MarkMode::kAtomicTestFirst>>(p, "cpp-field-tf");
    add_cpp<BarrierPolicy<false, MarkMode::kRacy>>(p, "cpp-nocache-racy");
    add_cpp<BarrierPolicy<false, MarkMode::kRacyTestFirst>>(p, "cpp-nocache-rtf");
    add_cpp<BarrierPolicy<false, MarkMode::kAtomic>>(p, "cpp-nocache-atomic");
    add_cpp<BarrierPolicy<false, MarkMode::kAtomicTestFirst>>(p, "cpp-nocache-tf");
  }
}

// ---- static instruction counts --------------------------------------------------------------

// The outcome mix of one measured pass of a pattern: fractions of hits, marks with the bit
// clear and marks with the bit already set (no access is out of range here).
struct Mix {
  double hit = 0, mark_clear = 0, mark_set = 0;
};

Mix outcome_mix(const Pattern& p, bool cache) {
  const std::vector<std::uint32_t>& idx = sequence_of(p.name, p.heap / kObjBytes);
  std::vector<bool> bit(p.heap / kObjBytes, false);
  std::uint64_t cached = ~std::uint64_t{0};
  Mix m;
  const bool fresh = std::string(p.name) == "seq_fresh";
  for (int pass = 0; pass < 2; ++pass) {  // pass 0 warms up (steady state) unless fresh
    if (fresh) {
      std::fill(bit.begin(), bit.end(), false);
      cached = ~std::uint64_t{0};
    }
    for (std::uint32_t i : idx) {
      double* slot;
      if (cache && i == cached) slot = &m.hit;
      else slot = bit[i] ? &m.mark_set : &m.mark_clear;
      if (pass == 1) *slot += 1;
      bit[i] = true;
      if (cache) cached = i;
    }
  }
  const auto n = static_cast<double>(idx.size());
  m.hit /= n;
  m.mark_clear /= n;
  m.mark_set /= n;
  return m;
}

void print_instruction_counts() {
  BarrierDescriptor desc;  // bounds do not change the counts except movz/movk of immediates
  desc.begin = 0x12c00000;
  desc.size = 0x20000000;
  desc.log2_granule = 3;
  std::printf("\nEmitted barrier instructions per access (static paths; descriptor in a register; "
              "arm64 atomics: LSE, exclusive loop in brackets)\n");
  std::printf("%-34s %17s %17s", "variant", "x86 hit/miss/oor", "a64 hit/miss/oor");
  for (const Pattern& p : kPatterns) std::printf(" %12s", group_name(p).c_str());
  std::printf("   (per-pattern columns: x86 | arm64)\n");
  for (const Measured& measured : measured_variants()) {
    if (measured.ool) continue;  // same instructions as the inline form, laid out differently
    const EmitterConfig& base = measured.cfg;
    EmitterConfig lse = base, ex = base;
    lse.a64_atomics = A64Atomics::kLse;
    ex.a64_atomics = A64Atomics::kExclusive;
    auto x = barrier_paths(asmjit::Arch::kX64, base, desc);
    auto a = barrier_paths(asmjit::Arch::kAArch64, lse, desc);
    auto ax = barrier_paths(asmjit::Arch::kAArch64, ex, desc);
    if (!x.ok() || !a.ok() || !ax.ok()) std::abort();
    auto per_access = [&](const BarrierPaths& bp, const Mix& m) {
      return m.hit * bp.hit + m.mark_clear * bp.mark + m.mark_set * bp.mark_bit_set;
    };
    char a64cell[40];
    if (base.mark == MarkMode::kRacy) std::snprintf(a64cell, sizeof a64cell, "%d/%d/%d", a->hit, a->mark, a->out_of_range);
    else std::snprintf(a64cell, sizeof a64cell, "%d/%d[%d]/%d", a->hit, a->mark, ax->mark, a->out_of_range);
    char x86cell[40];
    std::snprintf(x86cell, sizeof x86cell, "%d/%d/%d", x->hit, x->mark, x->out_of_range);
    std::printf("%-34s %17s %17s", base.name().c_str(), x86cell, a64cell);
    for (const Pattern& p : kPatterns) {
      const Mix m = outcome_mix(p, base.uses_cache());
      std::printf("  %5.2f|%5.2f", per_access(*x, m), per_access(*a, m));
    }
    std::printf("\n");
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int rc = objprof::bench::run_benchmarks(argc, argv, register_all,
                                                {{"emitted", "jit-nobarrier", emitted_rungs(), true},
                                                 {"emitted", "cpp-nobarrier", kInlineRungs, true},
                                                 {"fresh", "jit-nobarrier", emitted_rungs(), false},
                                                 {"fresh", "cpp-nobarrier", kInlineRungs, false}});
  if (rc == 0) print_instruction_counts();
  return rc;
}
