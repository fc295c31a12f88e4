// splitmix64: the IR layer's random numbers (the checker's executions, the generator's
// functions). Small, fast and identical on every platform, so a seed names the same run
// everywhere.
#pragma once

#include <cstdint>

namespace objprof::ir {

class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : s_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform enough in [0, n) for n far below 2^64; 0 when n is 0.
  std::uint32_t below(std::uint32_t n) { return n == 0 ? 0 : static_cast<std::uint32_t>(next() % n); }
  bool percent(std::uint32_t p) { return below(100) < p; }

 private:
  std::uint64_t s_;
};

}  // namespace objprof::ir
