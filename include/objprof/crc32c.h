// CRC32C (Castagnoli), the checksum of every trace chunk. crc32c() runs the best path this
// CPU supports; every path computes the same function, which the tests check by forcing each.
//
//   path         needs                                  what
//   portable     nothing                                Boost.CRC, a table lookup per byte
//   hardware     x86_64 SSE4.2 / arm64 CRC extension    the CRC32C instruction, 8 bytes a step
//   hardware3    the same                               three independent instruction streams
//                                                       over 1 KiB blocks, then 256-byte ones,
//                                                       joined with table shifts (the
//                                                       instruction's latency is 3 cycles,
//                                                       its throughput 1 per cycle)
//
// None needs CLMUL, AVX or anything past SSE4.2. OBJPROF_CRC32C=portable|hardware|hardware3
// forces a path (tests; a CPU whose detection is wrong); a path this CPU cannot run, or an
// unknown name, is reported once on stderr and the best path is used instead.
// The trace writer itself has no CPU-specific code: only its CRC does.
#pragma once

#include "objprof/result.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace objprof {

enum class Crc32cPath : std::uint8_t { kPortable, kHardware, kHardware3 };
inline constexpr Crc32cPath kAllCrc32cPaths[] = {Crc32cPath::kPortable, Crc32cPath::kHardware, Crc32cPath::kHardware3};

// CRC32C of `size` bytes, continuing from `crc` (0 to start), on crc32c_path().
std::uint32_t crc32c(const void* data, std::size_t size, std::uint32_t crc = 0) noexcept;

// The same on a given path, which this CPU must support.
std::uint32_t crc32c_with(Crc32cPath path, const void* data, std::size_t size, std::uint32_t crc = 0) noexcept;

// The portable (Boost.CRC) implementation.
std::uint32_t crc32c_portable(const void* data, std::size_t size, std::uint32_t crc = 0) noexcept;

// Whether this CPU can run `path`.
bool crc32c_supported(Crc32cPath path) noexcept;
// The path crc32c() uses (chosen once, at the first call).
Crc32cPath crc32c_path() noexcept;
// True when crc32c() uses hardware instructions.
bool crc32c_hardware() noexcept;

std::string_view crc32c_path_name(Crc32cPath path) noexcept;
// "portable", "hardware" or "hardware3"; anything else is an error naming the choices.
Result<Crc32cPath> crc32c_path_from_name(std::string_view name);

}  // namespace objprof
