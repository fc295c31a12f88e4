// EmitterConfig: which access barrier a backend emits, described once for the C++ barrier and
// both code generators. The C++ barrier (include/objprof/barrier.h) is configured by a
// BarrierConfig; an EmitterConfig is that same description plus the choices only machine code
// has (where the cache lives, whether bounds are baked into immediates, how arm64 does atomic
// marks). from() and barrier_config() convert both ways, so the emitted barrier and the
// C++ policy it must equal cannot drift: the differential tests compare every variant against
// access<Policy> built from barrier_config().
#pragma once

#include "objprof/access_bitmap.h"
#include "objprof/barrier.h"
#include "objprof/result.h"
#include "objprof/thread_state.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace objprof::backends {

// Where the last-accessed-object cache lives in emitted code.
enum class CacheLocation : std::uint8_t {
  kNone,            // no cache: every access does the range check (and marks if in range)
  kThreadField,     // ThreadState::cache, reached through the thread register ([x19, #0] on arm64)
  kPinnedRegister,  // a register reserved for the whole method (the paper's r8 on ARM32); the
                    // JIT loads it from ThreadState::cache on entry and after every safepoint
                    // (the collector resets the field at gc_end) and stores it back on exit
};

// Where the heap bounds come from. The bitmap pointer is always loaded from the descriptor,
// because snapshot_and_clear() swaps BarrierDescriptor::bitmap at every GC; log2(K) is always
// an immediate (it is fixed when the space is created, and the shift wants an immediate).
enum class BoundsSource : std::uint8_t {
  kImmediate,   // begin and size are baked in (the seed's `mov x16, #0x12c00000`)
  kDescriptor,  // begin and size are loaded from the BarrierDescriptor (shareable code)
};

// How arm64 emits MarkMode::kAtomic / kAtomicTestFirst. x86_64 always uses `lock or byte`.
enum class A64Atomics : std::uint8_t {
  kAuto,       // LSE if asmjit's CpuInfo says the host has it, else the exclusive loop
  kLse,        // `stsetb` (ARMv8.1 LSE)
  kExclusive,  // `ldxrb`/`orr`/`stxrb`/`cbnz` loop (ARMv8.0)
};

const char* cache_location_name(CacheLocation c) noexcept;
const char* bounds_source_name(BoundsSource b) noexcept;
const char* a64_atomics_name(A64Atomics a) noexcept;

struct EmitterConfig {
  CacheLocation cache = CacheLocation::kThreadField;
  MarkMode mark = MarkMode::kRacy;
  bool count = false;  // maintain ThreadState::counters exactly like BarrierPolicy<.., true>
  BoundsSource bounds = BoundsSource::kDescriptor;
  // Emit the seed's order (range check, then cache compare) instead of the C++ barrier's
  // (cache compare first, so a hit costs one compare). The bitmap and the cache come out the
  // same (the cache only ever holds 0 or an in-range object), but the counters do not: null
  // with an empty cache is a hit for the C++ barrier and a range rejection here. So
  // validate() refuses range_first with count.
  bool range_first = false;
  A64Atomics a64_atomics = A64Atomics::kAuto;

  // The emitted equivalent of the C++ barrier `c`; c.cache selects `where`.
  static EmitterConfig from(const BarrierConfig& c, CacheLocation where = CacheLocation::kThreadField);
  // The C++ policy with identical observable behaviour (bitmap, ThreadState::cache, counters).
  BarrierConfig barrier_config() const;

  // Refuses combinations whose behaviour would differ from barrier_config()'s C++ policy.
  // Both emitters call it first.
  Status validate() const;
  // The out-of-line form (a hit falls through, the miss path elsewhere) needs a cache compared
  // first; `arch` names the emitter in the error.
  Status validate_out_of_line(const char* arch) const;

  bool uses_cache() const noexcept { return cache != CacheLocation::kNone; }
  bool uses_thread() const noexcept { return cache == CacheLocation::kThreadField || count; }

  // "field/racy/desc", "pinned/atomic/imm/count", "none/atomic-test-first/desc/range-first".
  std::string name() const;

  bool operator==(const EmitterConfig&) const = default;
};

// Parses name()'s format: cache/mark/bounds followed by optional flags count, range-first,
// lse, exclusive, in any order.
Result<EmitterConfig> parse_emitter_config(std::string_view text);

// Every variant the emitters support: cache {none, field, pinned} x mark {racy, atomic,
// atomic-test-first} x count {off, on} x bounds {immediate, descriptor}, each with
// range_first off, plus range_first on for the variants that have a cache and do not count
// (48 in all). a64_atomics kAuto.
std::vector<EmitterConfig> all_emitter_configs();

// Offsets into ThreadState the emitted code addresses relative to the thread register.
// ThreadState has private members, so it is not standard-layout and offsetof on it is only
// conditionally supported; GCC and Clang lay out a class without virtual bases like a struct,
// and thread_layout_matches() checks the constants against a live object at run time.
namespace thread_layout {
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
#endif
inline constexpr std::size_t kCache = offsetof(ThreadState, cache);
inline constexpr std::size_t kExecuted = offsetof(ThreadState, counters) + offsetof(BarrierCounters, executed);
inline constexpr std::size_t kCacheHits = offsetof(ThreadState, counters) + offsetof(BarrierCounters, cache_hits);
inline constexpr std::size_t kMarks = offsetof(ThreadState, counters) + offsetof(BarrierCounters, marks);
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
static_assert(kCache == kThreadCacheOffset, "thread_state.h publishes the cache offset for code generators");
static_assert(sizeof(std::atomic<Address>) == 8 && sizeof(std::atomic<std::uint64_t>) == 8,
              "emitted code accesses the cache and counters as plain 64-bit words");
// arm64 `ldr xN, [x19, #off]` takes an unsigned offset that is a multiple of 8 below 32760.
static_assert(kCache % 8 == 0 && kExecuted % 8 == 0 && kCacheHits % 8 == 0 && kMarks % 8 == 0);
static_assert(kMarks < 32760);
}  // namespace thread_layout

// True if the thread_layout constants address the fields of a real ThreadState.
bool thread_layout_matches() noexcept;

static_assert(barrier_layout::kBeginOffset % 8 == 0 && barrier_layout::kSizeOffset % 8 == 0 &&
              barrier_layout::kBitmapOffset % 8 == 0 && barrier_layout::kBitmapOffset < 32760);

}  // namespace objprof::backends
