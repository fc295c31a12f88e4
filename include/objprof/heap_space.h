// HeapSpace: one profiled address range [begin, end) and its object alignment K.
//
// Every object the runtime places in the space starts on a K-byte boundary, so one bit per
// K-byte "granule" is enough to say "the object starting here was accessed". K is a power of
// two (default 8, as on ART and HotSpot with compressed class pointers off).
#pragma once

#include "objprof/result.h"

#include <bit>
#include <cstdint>
#include <string>

namespace objprof {

using Address = std::uintptr_t;

class HeapSpace {
 public:
  static constexpr std::uint32_t kDefaultAlignment = 8;

  // Validates and builds a space. Fails if begin is 0 (0 is the null reference, which the
  // barrier relies on never being in a space), end <= begin, K is not a power of two, or the
  // bounds are not K-aligned.
  static Result<HeapSpace> make(Address begin, Address end, std::uint32_t alignment = kDefaultAlignment,
                                std::string name = {});

  HeapSpace() = default;

  Address begin() const noexcept { return begin_; }
  Address end() const noexcept { return end_; }
  std::uint64_t size() const noexcept { return end_ - begin_; }
  std::uint32_t alignment() const noexcept { return 1u << log2_alignment_; }
  std::uint32_t log2_alignment() const noexcept { return log2_alignment_; }
  const std::string& name() const noexcept { return name_; }

  // One compare: unsigned wrap-around makes addresses below begin huge.
  bool contains(Address addr) const noexcept { return addr - begin_ < end_ - begin_; }
  // [addr, addr + bytes) lies inside the space (bytes 0: contains(addr)).
  bool contains(Address addr, std::uint64_t bytes) const noexcept {
    return contains(addr) && bytes <= end_ - addr;
  }
  bool is_aligned(Address addr) const noexcept { return (addr & (alignment() - 1)) == 0; }

  std::uint64_t granule_count() const noexcept { return size() >> log2_alignment_; }
  // Precondition: contains(addr).
  std::uint64_t granule_of(Address addr) const noexcept { return (addr - begin_) >> log2_alignment_; }
  Address address_of(std::uint64_t granule) const noexcept { return begin_ + (granule << log2_alignment_); }

 private:
  HeapSpace(Address begin, Address end, std::uint32_t log2_alignment, std::string name)
      : begin_(begin), end_(end), log2_alignment_(log2_alignment), name_(std::move(name)) {}

  Address begin_ = 0;
  Address end_ = 0;
  std::uint32_t log2_alignment_ = 3;
  std::string name_;
};

inline Result<HeapSpace> HeapSpace::make(Address begin, Address end, std::uint32_t alignment, std::string name) {
  if (alignment == 0 || !std::has_single_bit(alignment))
    return make_error(ErrorCode::kInvalidArgument,
                      "heap space alignment " + std::to_string(alignment) + " is not a power of two");
  if (begin == 0) return make_error(ErrorCode::kInvalidArgument, "heap space cannot start at address 0");
  if (end <= begin) return make_error(ErrorCode::kInvalidArgument, "heap space end must be above its begin");
  if ((begin | end) & (alignment - 1))
    return make_error(ErrorCode::kInvalidArgument,
                      "heap space bounds must be multiples of the alignment " + std::to_string(alignment));
  return HeapSpace(begin, end, static_cast<std::uint32_t>(std::countr_zero(alignment)), std::move(name));
}

}  // namespace objprof
