// Masks of a run of bits [g0, g1) in a table of 64-bit words that holds one bit per granule (the
// access bitmap's layout, and the stale tracker's start bits): the run's first word keeps the
// bits from g0 on, its last word the bits up to g1 - 1. Where the run fits in one word, the
// two masks ANDed are its mask. Shared by the profiler's inline collector hooks and the
// tracker, which both walk such runs a word at a time.
#pragma once

#include <cstdint>

namespace objprof::internal {

// The bits of g0's word from g0 on.
constexpr std::uint64_t head_mask(std::uint64_t g0) noexcept { return ~std::uint64_t{0} << (g0 & 63); }
// The bits of (g1 - 1)'s word up to and including g1 - 1; g1 > 0.
constexpr std::uint64_t tail_mask(std::uint64_t g1) noexcept { return ~std::uint64_t{0} >> (63 - ((g1 - 1) & 63)); }

}  // namespace objprof::internal
