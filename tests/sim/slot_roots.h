// SlotRoots: the sim tests' root set, a vector of slots the collector visits (and updates when
// it moves their objects); empty slots (0) are skipped.
#pragma once

#include "sim/heap.h"

#include <cstdint>
#include <vector>

namespace objprof::test {

struct SlotRoots : sim::RootProvider {
  std::vector<std::uint64_t> slots;
  SlotRoots() = default;
  explicit SlotRoots(std::size_t n) : slots(n) {}
  void visit_roots(const sim::RootFn& fn) override {
    for (auto& s : slots)
      if (s) fn(s);
  }
};

}  // namespace objprof::test
