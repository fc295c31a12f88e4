// Where the last-accessed-object cache pays, decided per barrier site from a profile.
//
// After the elimination pass has removed the barriers of repeated accesses to one object, the
// cache hits rarely at most kept sites, yet a site that consults it pays the compare on every
// execution and the store on every miss (docs/results.md, "JIT ladder": `all` executed more
// instructions than `elim`). A tier-0 run of the interpreter records, for every kept site, how
// often the cache would have hit if every kept site compared and stored, and which site stored
// the object each hit found. plan_cache() then gives every site one of three barriers:
//   kCompare  compare with the cache, store it on a miss (the cache as every rung used it)
//   kStore    never compare, store on the marking path: the site's own hits do not pay for the
//             compare, but comparing sites later find its object
//   kNone     no cache at all: the plain range check and mark
// The interpreter (InterpOptions::cache_plan) and the JIT (sim/jit) both follow the plan.
// Soundness does not depend on it: the cache only ever holds an object marked in the current
// epoch, whichever sites store it.
#pragma once

#include <objprof/result.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace objprof::sim {

enum class CacheUse : std::uint8_t { kCompare = 0, kStore = 1, kNone = 2 };
const char* cache_use_name(CacheUse u) noexcept;

// A kept barrier site: function index, decoded pc, operand (0 or 1).
struct CacheSiteKey {
  std::uint32_t fn = 0, pc = 0;
  std::uint8_t operand = 0;
  bool operator==(const CacheSiteKey&) const = default;
};

// The cost model, in instructions executed (backends/: the emitted sequences). A comparing
// site pays `compare` on every execution and `store` on every miss; a store-only site pays
// `store` on every execution it marks; a hit saves `barrier` (the range check and the mark).
struct CacheCosts {
  double compare = 2, store = 1, barrier = 13;
  // The JIT's sequences: x86_64 with the cache in the thread field (cmp [thread], obj; je) or
  // a pinned register (cmp; je), bounds as immediates; arm64 with the descriptor in a register
  // (ldr; cmp; b.eq from the field, cmp; b.eq pinned).
  static CacheCosts x86_64(bool /*pinned*/) noexcept { return {2, 1, 13}; }
  static CacheCosts arm64(bool pinned) noexcept { return {pinned ? 2.0 : 3.0, 1, 13}; }
  static CacheCosts host(bool pinned) noexcept;  // the ISA this build runs
};

// What the cache would have done at each kept site of one or more interpreted runs, every
// kept site comparing and storing (InterpOptions::profile_cache, Interpreter::cache_profile()).
struct CacheProfile {
  std::vector<CacheSiteKey> sites;            // site id -> where it is
  std::vector<std::uint64_t> executed, hits;  // per site id
  // (producer, consumer) -> hits at consumer that found the object producer had stored.
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint64_t> fed;
  // Hits no site produced: null compared with an empty cache (the plan does not count on them).
  std::uint64_t unproduced_hits = 0;

  // Every site of `sites`, nothing counted yet.
  static CacheProfile empty_for(std::vector<CacheSiteKey> sites);
  std::uint64_t total_executed() const;
  std::uint64_t total_hits() const;
  // Adds another run's counts (same module and pass: same sites, else an error).
  Status merge(const CacheProfile& other);
};

struct CachePlan {
  std::vector<CacheSiteKey> sites;  // as in the profile it was made from
  std::vector<CacheUse> use;        // per site id
  // The model's barrier instructions over the profile: every site kNone, every site
  // kCompare, and this plan (hits counted only from producers that still store).
  double cost_none = 0, cost_all_compare = 0, cost_plan = 0;
  std::uint32_t count(CacheUse u) const;
};

// Chooses each site's barrier to minimise the model's cost over the profile. A comparing site's
// hits count only when the site that stored the object still stores (a kCompare or kStore
// site); then, on the profiled input, the planned run hits at least as often as the model says
// (between a store and the hit that found it, every barrier hit the same object, so sites that
// no longer store change nothing). Starts from "compare where the site's own hits pay" and
// improves one site at a time until no single change lowers the cost; never above all-kNone.
CachePlan plan_cache(const CacheProfile& profile, const CacheCosts& costs);

}  // namespace objprof::sim
