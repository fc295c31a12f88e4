// Emitted barriers executed on the host (x86_64 natively, arm64 under qemu in the arm64
// build), each against the C++ barrier access<Policy> built from the same configuration:
// after every access the bitmap, ThreadState::cache and the counters must be identical.
#include "backends/barrier_emitter.h"
#include "backends/barrier_thunk.h"

#include "../test_env.h"

#include <objprof/barrier.h>

#include <catch2/catch.hpp>

#include <cstddef>
#include <cstring>
#include <random>
#include <vector>

#if defined(__aarch64__)
#include <asmjit/arm/a64assembler.h>
#include <asmjit/arm/a64compiler.h>
#endif

namespace test_barrier_exec {

using namespace objprof;
using namespace objprof::backends;

namespace {

// One profiled space with two identical bitmaps and threads: one for the emitted barrier,
// one for the C++ barrier.
struct Twin {
  HeapSpace space;
  std::unique_ptr<AccessBitmap> jit_bitmap, cpp_bitmap;
  ThreadState jit_thread{1, "jit"}, cpp_thread{2, "cpp"};

  explicit Twin(const HeapSpace& s)
      : space(s), jit_bitmap(std::move(*AccessBitmap::create(s))), cpp_bitmap(std::move(*AccessBitmap::create(s))) {}

  void cpp_access(const BarrierConfig& c, Address obj) {
    with_barrier_policy(c, [&](auto policy) { access<decltype(policy)>(cpp_thread, *cpp_bitmap, obj); });
  }

  bool bitmaps_equal() const {
    const std::uint8_t* a = jit_bitmap->descriptor().bitmap.load();
    const std::uint8_t* b = cpp_bitmap->descriptor().bitmap.load();
    return std::memcmp(a, b, jit_bitmap->size_bytes()) == 0;
  }

  void check_same_state() const {
    CHECK(jit_thread.cache.load() == cpp_thread.cache.load());
    CHECK(jit_thread.counters.executed.load() == cpp_thread.counters.executed.load());
    CHECK(jit_thread.counters.cache_hits.load() == cpp_thread.counters.cache_hits.load());
    CHECK(jit_thread.counters.marks.load() == cpp_thread.counters.marks.load());
    CHECK(bitmaps_equal());
  }
};

// Addresses that exercise every outcome: in range (aligned and not), repeats (cache hits),
// null, the space's first and last granules, just outside both ends, granule and bitmap-byte
// boundaries, the top of the address space.
std::vector<Address> address_sequence(const HeapSpace& s, std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const std::uint64_t k = s.alignment();
  const std::uint64_t byte_span = 8 * k;  // bytes of heap per bitmap byte
  std::vector<Address> out;
  const Address edges[] = {0,
                           s.begin(),
                           s.begin() + k - 1,
                           s.begin() + k,
                           s.end() - k,
                           s.end() - 1,
                           s.end(),
                           s.end() + k,
                           s.begin() - k,
                           s.begin() - 1,
                           ~Address{0} - 7,
                           s.begin() + byte_span - k,
                           s.begin() + byte_span,
                           s.begin() + 3 * byte_span - 1};
  for (Address a : edges) out.push_back(a);
  while (out.size() < n) {
    const std::uint64_t r = rng() % 16;
    if (r < 4 && !out.empty()) {
      out.push_back(out.back());  // repeat: a cache hit
    } else if (r < 5) {
      out.push_back(out[rng() % out.size()]);  // an older object again
    } else if (r < 6) {
      out.push_back(0);
    } else if (r < 7) {
      out.push_back(s.end() + rng() % (1 << 20));
    } else if (r < 8) {
      out.push_back(s.begin() - 1 - rng() % (1 << 20));
    } else if (r < 9) {
      // A small window near the start, so bytes get several bits set.
      out.push_back(s.begin() + (rng() % (32 * k)));
    } else {
      const std::uint64_t off = rng() % s.size();
      out.push_back(s.begin() + (r < 14 ? off & ~(k - 1) : off));
    }
  }
  return out;
}

// The variants to execute: every configuration, and on arm64 both atomic implementations
// (LSE only if the CPU, or qemu's -cpu max, has it).
std::vector<EmitterConfig> executed_variants() {
  std::vector<EmitterConfig> out;
  for (const EmitterConfig& cfg : all_emitter_configs()) {
#if defined(__aarch64__)
    if (cfg.mark != MarkMode::kRacy) {
      EmitterConfig ex = cfg;
      ex.a64_atomics = A64Atomics::kExclusive;
      out.push_back(ex);
      if (a64_resolve_atomics(A64Atomics::kAuto) == A64Atomics::kLse) {
        EmitterConfig lse = cfg;
        lse.a64_atomics = A64Atomics::kLse;
        out.push_back(lse);
      }
      continue;
    }
#endif
    out.push_back(cfg);
  }
  return out;
}

HeapSpace make_space(Address begin, std::uint64_t size, std::uint32_t k) {
  Result<HeapSpace> s = HeapSpace::make(begin, begin + size, k, "emitted");
  REQUIRE(s.ok());
  return *s;
}

}  // namespace

TEST_CASE("backends: Emitted barriers equal the C++ barrier on random address sequences", "[backends][exec][single-threaded]") {
  if (!barrier_thunks_supported()) {
    SUCCEED("emitted code runs only on x86_64 and arm64 hosts");
    return;
  }
  asmjit::JitRuntime rt;
  // A low space (immediates fit in 32 bits on x86), a high one with K = 16, and one of more
  // than 2 GiB (size does not fit a 32-bit immediate). The barrier never dereferences the
  // object, so the spaces need no memory behind them; only the bitmaps are real.
  const HeapSpace spaces[] = {make_space(0x10000000, 1 << 16, 8), make_space(0x7f1234560000, 1 << 17, 16),
                              make_space(0x500000000000, (std::uint64_t{1} << 31) + 4096, 8)};
  const std::size_t n = objprof::test::scaled(300, 6);
  std::uint64_t seed = 1;
  for (const HeapSpace& space : spaces) {
    const bool huge = space.size() > (std::uint64_t{1} << 31);
    for (const EmitterConfig& cfg : executed_variants()) {
      // Descriptor in a register, baked, and the out-of-line form where the variant has one.
      for (int mode = 0; mode < 3; ++mode) {
        ThunkOptions options;
        options.desc_register = mode != 1;
        options.out_of_line = mode == 2;
        if (options.out_of_line && (!cfg.uses_cache() || cfg.range_first)) continue;
        // The huge space's bitmap is 32 MiB: one variant per bounds source is enough there.
        if (huge && (cfg.count || cfg.range_first || cfg.mark == MarkMode::kAtomicTestFirst || mode != 0)) continue;
        INFO(cfg.name() << " space " << std::hex << space.begin() << std::dec << " mode " << mode);
        Twin t(space);
        Result<BarrierThunk> thunk =
            BarrierThunk::compile(rt, cfg, t.jit_bitmap->descriptor(), ThunkKind::kSingle, options);
        INFO((thunk.ok() ? std::string() : thunk.error().message));
        REQUIRE(thunk.ok());
        BarrierThunk::SingleFn f = thunk->single();
        const std::vector<Address> seq = address_sequence(space, n, seed++);
        const BarrierConfig c = cfg.barrier_config();
        std::vector<BitmapSnapshot> held;
        bool ok = true;
        for (std::size_t i = 0; i < seq.size() && ok; ++i) {
          // Two GCs in the middle of the sequence: the bitmap buffer is swapped under the
          // emitted code, which must follow it. The first keeps the caches (a cached object
          // is then not re-marked on either side), the second resets them as gc_end does.
          if (i == seq.size() / 3 || i == 2 * seq.size() / 3) {
            Result<BitmapSnapshot> a = t.jit_bitmap->snapshot_and_clear();
            Result<BitmapSnapshot> b = t.cpp_bitmap->snapshot_and_clear();
            REQUIRE(a.ok());
            REQUIRE(b.ok());
            CHECK(std::memcmp(a->bytes().data(), b->bytes().data(), a->bytes().size()) == 0);
            held.push_back(std::move(*a));
            held.push_back(std::move(*b));
            if (i == 2 * seq.size() / 3) {
              t.jit_thread.reset_cache();
              t.cpp_thread.reset_cache();
            }
          }
          INFO("access " << i << " at " << std::hex << seq[i]);
          f(&t.jit_thread, &t.jit_bitmap->descriptor(), seq[i]);
          t.cpp_access(c, seq[i]);
          // The huge bitmap is compared at the touched byte each time and in full at the end.
          if (huge) {
            if (space.contains(seq[i])) {
              const std::uint64_t byte = space.granule_of(seq[i]) >> 3;
              ok = t.jit_bitmap->descriptor().bitmap.load()[byte] == t.cpp_bitmap->descriptor().bitmap.load()[byte];
            }
            ok = ok && t.jit_thread.cache.load() == t.cpp_thread.cache.load() &&
                 t.jit_thread.counters.marks.load() == t.cpp_thread.counters.marks.load();
          } else {
            ok = t.bitmaps_equal() && t.jit_thread.cache.load() == t.cpp_thread.cache.load() &&
                 t.jit_thread.counters.executed.load() == t.cpp_thread.counters.executed.load() &&
                 t.jit_thread.counters.cache_hits.load() == t.cpp_thread.counters.cache_hits.load() &&
                 t.jit_thread.counters.marks.load() == t.cpp_thread.counters.marks.load();
          }
          if (!ok) t.check_same_state();  // says which part differs
        }
        CHECK(ok);
        t.check_same_state();
        CHECK(t.jit_bitmap->count() > 0);
      }
    }
  }
}

TEST_CASE("backends: Emitted barrier loops equal the C++ barrier and keep the pinned cache across accesses",
          "[backends][exec]") {
  if (!barrier_thunks_supported()) return;
  asmjit::JitRuntime rt;
  const HeapSpace space = make_space(0x20000000, 1 << 15, 8);
  const std::vector<Address> seq = address_sequence(space, objprof::test::scaled(2000, 8), 99);
  for (const EmitterConfig& cfg : executed_variants()) {
    for (bool ool : {false, true}) {
      if (ool && (!cfg.uses_cache() || cfg.range_first)) continue;
      INFO(cfg.name() << (ool ? " out of line" : ""));
      Twin t(space);
      ThunkOptions options;
      options.out_of_line = ool;
      Result<BarrierThunk> thunk = BarrierThunk::compile(rt, cfg, t.jit_bitmap->descriptor(), ThunkKind::kLoop, options);
      REQUIRE(thunk.ok());
      thunk->loop()(&t.jit_thread, &t.jit_bitmap->descriptor(), seq.data(), 0);  // n = 0: nothing
      t.check_same_state();
      // Half, then the rest: the pinned cache is stored on exit and reloaded on entry.
      const std::size_t half = seq.size() / 2;
      thunk->loop()(&t.jit_thread, &t.jit_bitmap->descriptor(), seq.data(), half);
      for (std::size_t i = 0; i < half; ++i) t.cpp_access(cfg.barrier_config(), seq[i]);
      t.check_same_state();
      thunk->loop()(&t.jit_thread, &t.jit_bitmap->descriptor(), seq.data() + half, seq.size() - half);
      for (std::size_t i = half; i < seq.size(); ++i) t.cpp_access(cfg.barrier_config(), seq[i]);
      t.check_same_state();
    }
  }
}

TEST_CASE("backends: Store-only barriers interleaved with comparing ones equal the C++ policies", "[backends][exec]") {
  // A per-site cache plan (sim/cache_plan.h) mixes sites that compare with sites that only
  // store: on both sides each access picks the same kind at random, and after every access
  // the bitmap, cache and counters must agree.
  if (!barrier_thunks_supported()) return;
  asmjit::JitRuntime rt;
  const HeapSpace space = make_space(0x30000000, 1 << 15, 8);
  const std::vector<Address> seq = address_sequence(space, objprof::test::scaled(1500, 6), 7);
  for (MarkMode mark : {MarkMode::kRacy, MarkMode::kAtomic}) {
    for (bool count : {false, true}) {
      EmitterConfig compare;
      compare.mark = mark;
      compare.count = count;
      EmitterConfig store = compare;
      store.store_only = true;
      REQUIRE(store.validate().ok());
      INFO(store.name());
      Twin t(space);
      Result<BarrierThunk> with = BarrierThunk::compile(rt, compare, t.jit_bitmap->descriptor(), ThunkKind::kSingle);
      Result<BarrierThunk> without = BarrierThunk::compile(rt, store, t.jit_bitmap->descriptor(), ThunkKind::kSingle);
      REQUIRE(with.ok());
      REQUIRE(without.ok());
      std::mt19937_64 rng(static_cast<std::uint64_t>(mark) * 2 + count);
      std::uint64_t store_only_hits = 0;
      for (std::size_t i = 0; i < seq.size(); ++i) {
        const bool compares = rng() % 2 == 0;
        const std::uint64_t hits_before = t.jit_thread.counters.cache_hits.load();
        (compares ? with : without)->single()(&t.jit_thread, &t.jit_bitmap->descriptor(), seq[i]);
        if (!compares) store_only_hits += t.jit_thread.counters.cache_hits.load() - hits_before;
        auto cpp = [&]<bool Compare>() {
          with_barrier_policy(compare.barrier_config(), [&](auto p) {
            using P = decltype(p);
            access<BarrierPolicy<true, P::kMark, P::kCount, Compare>>(t.cpp_thread, *t.cpp_bitmap, seq[i]);
          });
        };
        if (compares) cpp.template operator()<true>();
        else cpp.template operator()<false>();
        if (t.jit_thread.cache.load() != t.cpp_thread.cache.load() || !t.bitmaps_equal() ||
            t.jit_thread.counters.marks.load() != t.cpp_thread.counters.marks.load()) {
          INFO("access " << i);
          t.check_same_state();
          FAIL("emitted and C++ barriers diverged");
        }
      }
      t.check_same_state();
      CHECK(store_only_hits == 0);  // a store-only site never skips
      if (count) CHECK(t.jit_thread.counters.cache_hits.load() > 0);
    }
  }
}

// ---------------------------------------------------------------------------------------
// Register preservation: a harness loads every general-purpose register from an array, runs
// one barrier with a random register assignment, and stores every register back. Registers
// other than the declared scratch ones (and the pinned cache, which must hold the new cache)
// must come back unchanged; the bitmap, cache and counters must still equal the C++ barrier's.
// With `pinned_from_field` a pinned cache is loaded from its thread field before the barrier
// and stored back after it, as a JIT does around a method.

namespace {

#if defined(__x86_64__)
constexpr std::uint32_t kRegCount = 16;
constexpr std::uint32_t kDefaultThreadId = asmjit::x86::Gp::kIdR15;  // X86BarrierRegs::sysv
bool usable_reg(std::uint32_t id) { return id != asmjit::x86::Gp::kIdSp; }

Result<void*> compile_harness(asmjit::JitRuntime& rt, const EmitterConfig& cfg, const BarrierDescriptor& desc,
                              const X86BarrierRegs& regs, bool pinned_from_field = false) {
  namespace x86 = asmjit::x86;
  asmjit::CodeHolder code;
  code.init(rt.environment());
  x86::Assembler a(&code);
  const x86::Gp saved[] = {x86::rbx, x86::rbp, x86::r12, x86::r13, x86::r14, x86::r15};
  for (const x86::Gp& g : saved) a.push(g);
  a.push(x86::rdi);  // the array
  for (std::uint32_t id = 0; id < kRegCount; ++id)
    if (usable_reg(id) && id != x86::Gp::kIdDi) a.mov(x86::gpq(id), x86::qword_ptr(x86::rdi, static_cast<int>(8 * id)));
  a.mov(x86::rdi, x86::qword_ptr(x86::rdi, 8 * x86::Gp::kIdDi));
  if (pinned_from_field)
    if (Status s = emit_load_pinned_cache(a, cfg, regs); !s) return s.error();
  if (Status s = emit_access_barrier(a, cfg, desc, regs); !s) return s.error();
  if (pinned_from_field)
    if (Status s = emit_store_pinned_cache(a, cfg, regs); !s) return s.error();
  a.push(x86::rax);
  a.mov(x86::rax, x86::qword_ptr(x86::rsp, 8));
  for (std::uint32_t id = 0; id < kRegCount; ++id)
    if (usable_reg(id) && id != x86::Gp::kIdAx) a.mov(x86::qword_ptr(x86::rax, static_cast<int>(8 * id)), x86::gpq(id));
  a.pop(x86::rcx);
  a.mov(x86::qword_ptr(x86::rax, 8 * x86::Gp::kIdAx), x86::rcx);
  a.pop(x86::rdi);
  for (int i = 5; i >= 0; --i) a.pop(saved[i]);
  a.ret();
  void* fn = nullptr;
  if (rt.add(&fn, &code) != asmjit::kErrorOk) return make_error(ErrorCode::kInvalidArgument, "harness did not assemble");
  return fn;
}

struct Assignment {
  X86BarrierRegs regs;
  std::vector<std::uint32_t> scratch_ids;
};

Assignment random_assignment(std::mt19937_64& rng, const EmitterConfig&, bool desc_reg) {
  namespace x86 = asmjit::x86;
  std::vector<std::uint32_t> pool;
  for (std::uint32_t id = 0; id < kRegCount; ++id)
    if (usable_reg(id)) pool.push_back(id);
  std::shuffle(pool.begin(), pool.end(), rng);
  Assignment a;
  std::size_t next = 0;
  a.regs.obj = x86::gpq(pool[next++]);
  a.regs.thread = x86::gpq(pool[next++]);
  if (desc_reg) a.regs.desc = x86::gpq(pool[next++]);
  a.regs.cache = x86::gpq(pool[next++]);
  for (auto& g : a.regs.scratch) {
    g = x86::gpq(pool[next++]);
    a.scratch_ids.push_back(g.id());
  }
  return a;
}
#elif defined(__aarch64__)
constexpr std::uint32_t kRegCount = 31;  // x0..x30
constexpr std::uint32_t kDefaultThreadId = 19;  // A64BarrierRegs::art: x19
bool usable_reg(std::uint32_t id) { return id != 18; }  // x18: the platform register

Result<void*> compile_harness(asmjit::JitRuntime& rt, const EmitterConfig& cfg, const BarrierDescriptor& desc,
                              const A64BarrierRegs& regs, bool pinned_from_field = false) {
  namespace a64 = asmjit::a64;
  using asmjit::arm::ptr;
  asmjit::CodeHolder code;
  code.init(rt.environment());
  a64::Assembler a(&code);
  for (std::uint32_t id = 19; id < 31; id += 2)  // x19..x30: callee-saved, fp, lr
    a.stp(a64::x(id), a64::x(id + 1), asmjit::arm::ptr_pre(a64::sp, -16));
  a.str(a64::x0, asmjit::arm::ptr_pre(a64::sp, -16));  // the array
  for (std::uint32_t id = 1; id < kRegCount; ++id)
    if (usable_reg(id)) a.ldr(a64::x(id), ptr(a64::x0, static_cast<int>(8 * id)));
  a.ldr(a64::x0, ptr(a64::x0));
  if (pinned_from_field)
    if (Status s = emit_load_pinned_cache(a, cfg, regs); !s) return s.error();
  if (Status s = emit_access_barrier(a, cfg, desc, regs); !s) return s.error();
  if (pinned_from_field)
    if (Status s = emit_store_pinned_cache(a, cfg, regs); !s) return s.error();
  a.str(a64::x0, asmjit::arm::ptr_pre(a64::sp, -16));
  a.ldr(a64::x0, ptr(a64::sp, 16));
  for (std::uint32_t id = 1; id < kRegCount; ++id)
    if (usable_reg(id)) a.str(a64::x(id), ptr(a64::x0, static_cast<int>(8 * id)));
  a.ldr(a64::x1, asmjit::arm::ptr_post(a64::sp, 32));  // barrier's x0; drops the array slot too
  a.str(a64::x1, ptr(a64::x0));
  for (int id = 29; id >= 19; id -= 2) a.ldp(a64::x(static_cast<std::uint32_t>(id)), a64::x(static_cast<std::uint32_t>(id + 1)),
                                             asmjit::arm::ptr_post(a64::sp, 16));
  a.ret(a64::x30);
  void* fn = nullptr;
  if (rt.add(&fn, &code) != asmjit::kErrorOk) return make_error(ErrorCode::kInvalidArgument, "harness did not assemble");
  return fn;
}

struct Assignment {
  A64BarrierRegs regs;
  std::vector<std::uint32_t> scratch_ids;
};

Assignment random_assignment(std::mt19937_64& rng, const EmitterConfig& cfg, bool desc_reg) {
  namespace a64 = asmjit::a64;
  std::vector<std::uint32_t> pool;
  for (std::uint32_t id = 0; id < kRegCount; ++id)
    if (usable_reg(id)) pool.push_back(id);
  std::shuffle(pool.begin(), pool.end(), rng);
  Assignment a;
  std::size_t next = 0;
  a.regs.obj = a64::x(pool[next++]);
  a.regs.thread = a64::x(pool[next++]);
  a.regs.desc = desc_reg ? a64::x(pool[next++]) : a64::Gp();
  a.regs.cache = a64::x(pool[next++]);
  for (auto& g : a.regs.scratch) g = a64::x(pool[next++]);
  for (int i = 0; i < a64_scratch_count(cfg); ++i) a.scratch_ids.push_back(a.regs.scratch[static_cast<std::size_t>(i)].id());
  return a;
}
#endif

}  // namespace

TEST_CASE("backends: Emitted barriers preserve every register but their declared scratch registers", "[backends][exec]") {
#if defined(__x86_64__) || defined(__aarch64__)
  asmjit::JitRuntime rt;
  const HeapSpace space = make_space(0x30000000, 1 << 14, 8);
  std::mt19937_64 rng(7);
  const std::size_t rounds = objprof::test::scaled(3, 3);
  for (const EmitterConfig& cfg : executed_variants()) {
    for (std::size_t round = 0; round < rounds; ++round) {
      const bool desc_reg = round % 2 == 0;
      Twin t(space);
      const Assignment as = random_assignment(rng, cfg, desc_reg);
      INFO(cfg.name() << " obj " << as.regs.obj.id() << " thread " << as.regs.thread.id() << " desc "
                      << (desc_reg ? static_cast<int>(as.regs.desc.id()) : -1) << " cache " << as.regs.cache.id());
      Result<void*> fn = compile_harness(rt, cfg, t.jit_bitmap->descriptor(), as.regs);
      INFO((fn.ok() ? std::string() : fn.error().message));
      REQUIRE(fn.ok());
      auto harness = reinterpret_cast<void (*)(std::uint64_t*)>(*fn);
      // A miss, a hit, out of range, null, another miss.
      const Address objs[] = {space.begin() + 64, space.begin() + 64, space.end() + 8, 0, space.end() - 8};
      for (Address obj : objs) {
        std::uint64_t in[kRegCount], out[kRegCount];
        for (std::uint32_t id = 0; id < kRegCount; ++id) in[id] = 0x0101010101010101ull * (id + 1) ^ rng();
        in[as.regs.obj.id()] = obj;
        if (cfg.uses_thread()) in[as.regs.thread.id()] = reinterpret_cast<std::uint64_t>(&t.jit_thread);
        if (desc_reg) in[as.regs.desc.id()] = reinterpret_cast<std::uint64_t>(&t.jit_bitmap->descriptor());
        // The pinned register carries the cache between accesses (ThreadState::cache is not
        // involved); mirror it in the twin's field for the comparison.
        if (cfg.cache == CacheLocation::kPinnedRegister) in[as.regs.cache.id()] = t.jit_thread.cache.load();
        std::memcpy(out, in, sizeof in);
        harness(out);
        t.cpp_access(cfg.barrier_config(), obj);
        for (std::uint32_t id = 0; id < kRegCount; ++id) {
          if (!usable_reg(id)) continue;
          const bool scratch = std::find(as.scratch_ids.begin(), as.scratch_ids.end(), id) != as.scratch_ids.end();
          if (scratch) continue;
          INFO("register " << id);
          if (cfg.cache == CacheLocation::kPinnedRegister && id == as.regs.cache.id()) {
            CHECK(out[id] == t.cpp_thread.cache.load());
            t.jit_thread.cache.store(out[id]);
          } else {
            CHECK(out[id] == in[id]);
          }
        }
        t.check_same_state();
      }
    }
  }
#else
  SUCCEED("emitted code runs only on x86_64 and arm64 hosts");
#endif
}

// ---------------------------------------------------------------------------------------
// The cache in the VM's own thread struct: a BarrierSlot and BarrierCounters among the VM's
// fields, at offsets other than ThreadState's, reached through a register other than the
// default thread register (random, like the harness above). After every access the struct's
// slot, counters and the bitmap must equal the C++ barrier's on a twin struct, and the VM's
// own fields must be untouched. test_barrier_listing.cc checks the same layout's instructions.

namespace {

struct FakeVmThread {
  std::uint64_t before[5];   // 40 bytes of the VM's own state
  BarrierSlot slot;          // offset 40
  std::uint64_t between;     // 48
  BarrierCounters counters;  // 56
  std::uint64_t after[2];
};
static_assert(offsetof(FakeVmThread, slot) == 40 && offsetof(FakeVmThread, counters) == 56);

constexpr std::uint64_t kVmCanary = 0x5a5a1234a5a54321ull;

void fill_vm_canaries(FakeVmThread& t) {
  for (auto& w : t.before) w = kVmCanary;
  t.between = kVmCanary;
  for (auto& w : t.after) w = kVmCanary;
}

bool vm_canaries_intact(const FakeVmThread& t) {
  bool ok = t.between == kVmCanary;
  for (auto w : t.before) ok = ok && w == kVmCanary;
  for (auto w : t.after) ok = ok && w == kVmCanary;
  return ok;
}

bool same_vm_state(const FakeVmThread& a, const FakeVmThread& b) {
  return a.slot.cache.load() == b.slot.cache.load() && a.counters.executed.load() == b.counters.executed.load() &&
         a.counters.cache_hits.load() == b.counters.cache_hits.load() &&
         a.counters.marks.load() == b.counters.marks.load();
}

}  // namespace

TEST_CASE("backends: Emitted barriers keep the cache in the VM's own thread struct at any offset and through any register",
          "[backends][exec]") {
#if defined(__x86_64__) || defined(__aarch64__)
  asmjit::JitRuntime rt;
  const HeapSpace space = make_space(0x50000000, 1 << 14, 8);
  const std::vector<Address> seq = address_sequence(space, objprof::test::scaled(200, 4), 17);
  std::mt19937_64 rng(11);
  for (EmitterConfig cfg : executed_variants()) {
    cfg.fields.cache = offsetof(FakeVmThread, slot);
    cfg.fields.counters = offsetof(FakeVmThread, counters);
    const bool pinned = cfg.cache == CacheLocation::kPinnedRegister;
    for (const bool desc_reg : {true, false}) {
      Assignment as = random_assignment(rng, cfg, desc_reg);
      while (as.regs.thread.id() == kDefaultThreadId) as = random_assignment(rng, cfg, desc_reg);
      INFO(cfg.name() << " thread register " << as.regs.thread.id() << " obj " << as.regs.obj.id()
                      << (desc_reg ? " desc in a register" : " desc baked"));
      Twin t(space);  // its bitmaps; the VM structs below replace its ThreadStates
      FakeVmThread jit_vm{}, cpp_vm{};
      fill_vm_canaries(jit_vm);
      fill_vm_canaries(cpp_vm);
      // A pinned cache is loaded from the slot before the barrier and stored back after it.
      Result<void*> fn = compile_harness(rt, cfg, t.jit_bitmap->descriptor(), as.regs, pinned);
      INFO((fn.ok() ? std::string() : fn.error().message));
      REQUIRE(fn.ok());
      auto harness = reinterpret_cast<void (*)(std::uint64_t*)>(*fn);
      std::vector<BitmapSnapshot> held;
      bool ok = true;
      for (std::size_t i = 0; i < seq.size() && ok; ++i) {
        if (i == seq.size() / 2) {  // a GC: new bitmap buffers, and the VM resets its slots
          Result<BitmapSnapshot> a = t.jit_bitmap->snapshot_and_clear();
          Result<BitmapSnapshot> b = t.cpp_bitmap->snapshot_and_clear();
          REQUIRE((a.ok() && b.ok()));
          held.push_back(std::move(*a));
          held.push_back(std::move(*b));
          jit_vm.slot.reset();
          cpp_vm.slot.reset();
        }
        INFO("access " << i << " at " << std::hex << seq[i]);
        std::uint64_t in[kRegCount], out[kRegCount];
        for (std::uint32_t id = 0; id < kRegCount; ++id) in[id] = rng();
        in[as.regs.obj.id()] = seq[i];
        in[as.regs.thread.id()] = reinterpret_cast<std::uint64_t>(&jit_vm);
        if (desc_reg) in[as.regs.desc.id()] = reinterpret_cast<std::uint64_t>(&t.jit_bitmap->descriptor());
        std::memcpy(out, in, sizeof in);
        harness(out);
        with_barrier_policy(cfg.barrier_config(), [&](auto policy) {
          using P = decltype(policy);
          if constexpr (P::kCount) access<P>(cpp_vm.slot.cache, cpp_vm.counters, t.cpp_bitmap->descriptor(), seq[i]);
          else access<P>(cpp_vm.slot, t.cpp_bitmap->descriptor(), seq[i]);
        });
        ok = t.bitmaps_equal() && same_vm_state(jit_vm, cpp_vm) && out[as.regs.thread.id()] == in[as.regs.thread.id()];
        if (!ok) {  // say which part differs
          CHECK(t.bitmaps_equal());
          CHECK(jit_vm.slot.cache.load() == cpp_vm.slot.cache.load());
          CHECK(jit_vm.counters.executed.load() == cpp_vm.counters.executed.load());
          CHECK(jit_vm.counters.cache_hits.load() == cpp_vm.counters.cache_hits.load());
          CHECK(jit_vm.counters.marks.load() == cpp_vm.counters.marks.load());
        }
      }
      CHECK(ok);
      CHECK(vm_canaries_intact(jit_vm));
      CHECK(t.jit_bitmap->count() > 0);
      rt.release(*fn);
    }
  }
#else
  SUCCEED("emitted code runs only on x86_64 and arm64 hosts");
#endif
}

// ---------------------------------------------------------------------------------------
// The IR JIT calls the emitters from asmjit's Compiler with virtual registers: the register
// allocator picks the obj, thread, descriptor, cache and scratch registers. Three barriers in
// one function, f(thread, desc, a, b) = access(a); access(b); access(a), with the pinned
// cache in a virtual register across them.

namespace {

#if defined(__x86_64__)
using HostCompiler = asmjit::x86::Compiler;
using HostRegs = X86BarrierRegs;
#elif defined(__aarch64__)
using HostCompiler = asmjit::a64::Compiler;
using HostRegs = A64BarrierRegs;
#endif

#if defined(__x86_64__) || defined(__aarch64__)
using PairFn = void (*)(ThreadState*, BarrierDescriptor*, Address, Address);

// `ool`: the middle barrier in the out-of-line form, its slow path after the return.
Result<void*> compile_pair(asmjit::JitRuntime& rt, const EmitterConfig& cfg, const BarrierDescriptor& desc, bool ool) {
  asmjit::CodeHolder code;
  code.init(rt.environment());
  HostCompiler cc(&code);
  asmjit::FuncNode* fn = cc.addFunc(asmjit::FuncSignatureT<void, ThreadState*, BarrierDescriptor*, Address, Address>());
  HostRegs regs;
  regs.thread = cc.newUIntPtr("thread");
  regs.desc = cc.newUIntPtr("desc");
  auto a = cc.newUIntPtr("a"), b = cc.newUIntPtr("b");
  fn->setArg(0, regs.thread);
  fn->setArg(1, regs.desc);
  fn->setArg(2, a);
  fn->setArg(3, b);
  regs.cache = cc.newUIntPtr("cache");
  for (auto& g : regs.scratch) g = cc.newUIntPtr("scratch");
  const bool pinned = cfg.cache == CacheLocation::kPinnedRegister;
  if (pinned)
    if (Status s = emit_load_pinned_cache(cc, cfg, regs); !s) return s.error();
  const asmjit::Label slow = cc.newLabel(), resume = cc.newLabel();
  HostRegs ool_regs = regs;
  for (int i = 0; i < 3; ++i) {
    regs.obj = i == 1 ? b : a;
    if (ool && i == 1) {
      if (Status s = emit_access_barrier_fast(cc, cfg, desc, regs, slow); !s) return s.error();
      cc.bind(resume);
      ool_regs = regs;
    } else {
      if (Status s = emit_access_barrier(cc, cfg, desc, regs); !s) return s.error();
    }
  }
  if (pinned)
    if (Status s = emit_store_pinned_cache(cc, cfg, regs); !s) return s.error();
  if (ool) {
    cc.ret();
    if (Status s = emit_access_barrier_slow(cc, cfg, desc, ool_regs, slow, resume); !s) return s.error();
  }
  cc.endFunc();
  if (cc.finalize() != asmjit::kErrorOk) return make_error(ErrorCode::kInvalidArgument, "Compiler::finalize failed");
  void* out = nullptr;
  if (rt.add(&out, &code) != asmjit::kErrorOk) return make_error(ErrorCode::kInvalidArgument, "JitRuntime::add failed");
  return out;
}
#endif

}  // namespace

TEST_CASE("backends: Emitted barriers work from asmjit's Compiler with virtual registers", "[backends][exec]") {
#if defined(__x86_64__) || defined(__aarch64__)
  asmjit::JitRuntime rt;
  const HeapSpace space = make_space(0x40000000, 1 << 14, 8);
  const std::vector<Address> seq = address_sequence(space, objprof::test::scaled(200, 4), 5);
  for (const EmitterConfig& cfg : executed_variants()) {
    for (bool ool : {false, true}) {
      if (ool && (!cfg.uses_cache() || cfg.range_first)) continue;
      INFO(cfg.name() << (ool ? " out of line" : ""));
      Twin t(space);
      Result<void*> fn = compile_pair(rt, cfg, t.jit_bitmap->descriptor(), ool);
      INFO((fn.ok() ? std::string() : fn.error().message));
      REQUIRE(fn.ok());
      auto f = reinterpret_cast<PairFn>(*fn);
      for (std::size_t i = 0; i + 1 < seq.size(); ++i) {
        f(&t.jit_thread, &t.jit_bitmap->descriptor(), seq[i], seq[i + 1]);
        for (Address obj : {seq[i], seq[i + 1], seq[i]}) t.cpp_access(cfg.barrier_config(), obj);
      }
      t.check_same_state();
      rt.release(*fn);
    }
  }
#else
  SUCCEED("emitted code runs only on x86_64 and arm64 hosts");
#endif
}

}  // namespace test_barrier_exec
