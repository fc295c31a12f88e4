// Helpers shared by the core tests: a fake heap (aligned, real memory) to hand out addresses.
#pragma once

#include <objprof/heap_space.h>

#include "../test_env.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>

namespace objprof::test {

// A block of real, aligned memory standing in for a heap space.
class FakeHeap {
 public:
  explicit FakeHeap(std::size_t bytes, std::uint32_t alignment = 8)
      // aligned_alloc wants a size that is a multiple of the alignment.
      : bytes_(bytes), mem_(static_cast<std::uint8_t*>(std::aligned_alloc(4096, (bytes + 4095) & ~std::size_t{4095})), &std::free) {
    REQUIRE(mem_ != nullptr);
    auto s = HeapSpace::make(reinterpret_cast<Address>(mem_.get()), reinterpret_cast<Address>(mem_.get()) + bytes,
                             alignment, "fake");
    REQUIRE(s.ok());
    space_ = *s;
  }
  const HeapSpace& space() const { return space_; }
  Address at(std::size_t offset) const { return space_.begin() + offset; }

 private:
  std::size_t bytes_;
  std::unique_ptr<std::uint8_t, void (*)(void*)> mem_;
  HeapSpace space_;
};

}  // namespace objprof::test
