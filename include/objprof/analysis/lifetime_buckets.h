// Lifetime buckets, InMemProfiler style (its `#bucket-5,15,25` option): a list of lower
// bounds; bucket i holds lifetimes in [bound[i], bound[i+1]), the last one is open. Lifetimes
// are counted in GCs survived by default, or in bytes allocated.
#pragma once

#include "objprof/result.h"

#include <cstdint>
#include <string>
#include <vector>

namespace objprof::analysis {

enum class Clock : std::uint8_t { kGcs, kBytes };

struct LifetimeBuckets {
  Clock clock = Clock::kGcs;
  std::vector<std::uint64_t> bounds{0, 1, 2, 4, 8, 16, 32, 64};  // increasing, starts at 0

  std::size_t size() const noexcept { return bounds.size(); }
  // Index of the bucket holding `lifetime`.
  std::size_t index(std::uint64_t lifetime) const noexcept;
  // "0", "1", "2-3", "64+" (GCs); "0-1.0 KiB", "1.0 MiB+" (bytes).
  std::vector<std::string> labels() const;
};

// Parses "0,1,2,4,8" (GCs) or "0,64K,1M,16M" (bytes: K/M/G suffixes allowed). A missing 0 is
// added. Errors: empty items, non-numbers, bounds not increasing (kParse).
Result<LifetimeBuckets> parse_lifetime_buckets(const std::string& text, Clock clock);

}  // namespace objprof::analysis
