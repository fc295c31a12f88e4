// CRC32C (Castagnoli), the checksum of every trace chunk. Uses the CPU's CRC32C instructions
// (x86_64 SSE4.2, arm64 CRC extension) when present and Boost.CRC otherwise; both give the
// same value, which the tests check.
#pragma once

#include <cstddef>
#include <cstdint>

namespace objprof {

// CRC32C of `size` bytes, continuing from `crc` (0 to start).
std::uint32_t crc32c(const void* data, std::size_t size, std::uint32_t crc = 0) noexcept;

// The portable (Boost.CRC) implementation, exposed so tests can compare the two.
std::uint32_t crc32c_portable(const void* data, std::size_t size, std::uint32_t crc = 0) noexcept;

// True when crc32c() uses hardware instructions on this CPU.
bool crc32c_hardware() noexcept;

}  // namespace objprof
