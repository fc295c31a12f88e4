// BarrierDescriptor: everything an access barrier needs to know about one profiled space, in
// one standard-layout block. The inline C++ barrier (barrier.h) reads it, and JIT backends
// either bake its fields into immediates or load them from it at the offsets below, so the
// C++ barrier and emitted code share one description and cannot drift.
#pragma once

#include "objprof/heap_space.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace objprof {

struct BarrierDescriptor {
  Address begin = 0;                         // first byte of the space
  std::uint64_t size = 0;                    // end - begin: the range check is (obj - begin) < size
  std::atomic<std::uint8_t*> bitmap{nullptr};  // active bitmap buffer; swapped by snapshot_and_clear
  std::uint32_t log2_granule = 3;            // log2(K)
  std::uint32_t reserved = 0;
};

static_assert(std::is_standard_layout_v<BarrierDescriptor>);
static_assert(sizeof(std::atomic<std::uint8_t*>) == sizeof(void*), "bitmap pointer must be a plain word");

// Offsets for code generators (x86_64: [desc + off]; arm64: ldr xN, [xDesc, #off]).
namespace barrier_layout {
inline constexpr std::size_t kBeginOffset = offsetof(BarrierDescriptor, begin);
inline constexpr std::size_t kSizeOffset = offsetof(BarrierDescriptor, size);
inline constexpr std::size_t kBitmapOffset = offsetof(BarrierDescriptor, bitmap);
inline constexpr std::size_t kLog2GranuleOffset = offsetof(BarrierDescriptor, log2_granule);
}  // namespace barrier_layout

}  // namespace objprof
