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

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace objprof::backends {

// Offsets into ThreadState, the default place of the cache and counters (ThreadFields).
// ThreadState has private members, so it is not standard-layout and offsetof on it is only
// conditionally supported; GCC and Clang lay out a class without virtual bases like a struct,
// and thread_layout_matches() checks the constants against a live object at run time.
namespace thread_layout {
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
#endif
inline constexpr std::size_t kCache = offsetof(ThreadState, cache);
inline constexpr std::size_t kCounters = offsetof(ThreadState, counters);
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
static_assert(kCache == kThreadCacheOffset, "thread_state.h publishes the cache offset for code generators");
// The defaults must be valid for both ISAs (see EmitterConfig::validate(Isa)).
static_assert(kCache % 8 == 0 && kCounters % 8 == 0 && kCounters + sizeof(BarrierCounters) - 8 <= 32760);
}  // namespace thread_layout

// Offsets of the counters inside BarrierCounters (standard layout: three 64-bit words).
namespace counters_layout {
inline constexpr std::size_t kExecuted = offsetof(BarrierCounters, executed);
inline constexpr std::size_t kCacheHits = offsetof(BarrierCounters, cache_hits);
inline constexpr std::size_t kMarks = offsetof(BarrierCounters, marks);
inline constexpr std::size_t kSize = sizeof(BarrierCounters);
static_assert(std::is_standard_layout_v<BarrierCounters> && kMarks + 8 == kSize);
}  // namespace counters_layout

static_assert(sizeof(std::atomic<Address>) == 8 && sizeof(std::atomic<std::uint64_t>) == 8,
              "emitted code accesses the cache and counters as plain 64-bit words");

// Where emitted code finds the cache (CacheLocation::kThreadField, and the pinned register's
// load and store) and the counters (count): byte offsets from the thread register
// (X86BarrierRegs::thread, A64BarrierRegs::thread), which holds the address of whatever
// per-thread struct contains them. The default is objprof's ThreadState. A VM that embeds a
// BarrierSlot (and, to count, a BarrierCounters) in its own thread struct names that struct's
// register as the thread register and offsetof(VmThread, slot) here. Offsets are multiples of 8
// (aligned 64-bit words) that the ISA encodes in one load or store; EmitterConfig::validate
// refuses others.
struct ThreadFields {
  std::int64_t cache = static_cast<std::int64_t>(thread_layout::kCache);        // a std::atomic<Address>
  std::int64_t counters = static_cast<std::int64_t>(thread_layout::kCounters);  // a BarrierCounters

  std::int64_t executed() const noexcept { return counters + static_cast<std::int64_t>(counters_layout::kExecuted); }
  std::int64_t cache_hits() const noexcept { return counters + static_cast<std::int64_t>(counters_layout::kCacheHits); }
  std::int64_t marks() const noexcept { return counters + static_cast<std::int64_t>(counters_layout::kMarks); }
  bool operator==(const ThreadFields&) const = default;
};

// The instruction sets the emitters encode for (what validate(Isa) checks offsets against).
enum class Isa : std::uint8_t { kX86_64, kArm64 };
const char* isa_name(Isa isa) noexcept;

// Where the last-accessed-object cache lives in emitted code.
enum class CacheLocation : std::uint8_t {
  kNone,            // no cache: every access does the range check (and marks if in range)
  kThreadField,     // a word at [thread register + ThreadFields::cache]: ThreadState::cache by
                    // default ([x19, #0] on arm64), or a BarrierSlot in the VM's thread struct
  kPinnedRegister,  // a register reserved for the whole method (the paper's r8 on ARM32); the
                    // JIT loads it from that word on entry and after every safepoint (the
                    // collector resets the word at gc_end) and stores it back on exit
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
  bool count = false;  // maintain the BarrierCounters at ThreadFields::counters exactly like BarrierPolicy<.., true>
  BoundsSource bounds = BoundsSource::kDescriptor;
  // Emit the seed's order (range check, then cache compare) instead of the C++ barrier's
  // (cache compare first, so a hit costs one compare). The bitmap and the cache come out the
  // same (the cache only ever holds 0 or an in-range object), but the counters do not: null
  // with an empty cache is a hit for the C++ barrier and a range rejection here. So
  // validate() refuses range_first with count.
  bool range_first = false;
  // Store the cache when marking but never compare with it (BarrierPolicy<true, M, C, false>):
  // for a site whose own hits do not pay for the compare but whose object later sites find in
  // the cache (sim/cache_plan.h decides per site). Needs a cache; a store-only barrier never
  // counts a hit. barrier_config() has no field for it (BarrierConfig names whole-run variants).
  bool store_only = false;
  A64Atomics a64_atomics = A64Atomics::kAuto;
  // Offsets of the cache and counters from the thread register (default: ThreadState's).
  ThreadFields fields;

  // The emitted equivalent of the C++ barrier `c`; c.cache selects `where`.
  static EmitterConfig from(const BarrierConfig& c, CacheLocation where = CacheLocation::kThreadField);
  // The C++ policy with identical observable behaviour (bitmap, ThreadState::cache, counters).
  BarrierConfig barrier_config() const;

  // Refuses combinations whose behaviour would differ from barrier_config()'s C++ policy, and
  // thread-field offsets that are not multiples of 8 (aligned 64-bit words).
  Status validate() const;
  // validate(), and the thread-field offsets against what `isa` encodes in one load/store:
  // x86_64 a signed 32-bit displacement; arm64 `ldr/str xN, [base, #imm]` an unsigned offset,
  // a multiple of 8 up to 32760 (imm12 scaled by 8). Both emitters call it first.
  Status validate(Isa isa) const;
  // The out-of-line form (a hit falls through, the miss path elsewhere) needs a cache compared
  // first; `arch` names the emitter in the error.
  Status validate_out_of_line(const char* arch) const;

  bool uses_cache() const noexcept { return cache != CacheLocation::kNone; }
  bool compares_cache() const noexcept { return uses_cache() && !store_only; }
  bool uses_thread() const noexcept { return cache == CacheLocation::kThreadField || count; }

  // "field/racy/desc", "pinned/atomic/imm/count", "none/atomic-test-first/desc/range-first";
  // thread fields other than ThreadState's as "/cache@40" and "/counters@48".
  std::string name() const;

  bool operator==(const EmitterConfig&) const = default;
};

// Parses name()'s format: cache/mark/bounds followed by optional flags count, range-first,
// store-only, lse, exclusive, cache@OFFSET, counters@OFFSET, in any order.
Result<EmitterConfig> parse_emitter_config(std::string_view text);

// Every variant the emitters support: cache {none, field, pinned} x mark {racy, atomic,
// atomic-test-first} x count {off, on} x bounds {immediate, descriptor}, each with
// range_first off, plus range_first on for the variants that have a cache and do not count
// (48 in all). a64_atomics kAuto.
std::vector<EmitterConfig> all_emitter_configs();

// True if the thread_layout constants address the fields of a real ThreadState.
bool thread_layout_matches() noexcept;

static_assert(barrier_layout::kBeginOffset % 8 == 0 && barrier_layout::kSizeOffset % 8 == 0 &&
              barrier_layout::kBitmapOffset % 8 == 0 && barrier_layout::kBitmapOffset < 32760);

}  // namespace objprof::backends
