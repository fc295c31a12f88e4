// CRC32C: hardware instructions where the CPU has them, Boost.CRC everywhere else.
#include "objprof/crc32c.h"

#include <boost/crc.hpp>

#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <nmmintrin.h>
#elif defined(__aarch64__)
#include <sys/auxv.h>
#include <asm/hwcap.h>
#endif

namespace objprof {
namespace {

// Reflected CRC-32C: polynomial 0x1EDC6F41, init and final xor 0xFFFFFFFF.
using Crc32cBoost = boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true>;

#if defined(__x86_64__)
bool detect_hardware() noexcept {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  return (c & bit_SSE4_2) != 0;
}

__attribute__((target("sse4.2"))) std::uint32_t crc_hw(const void* data, std::size_t size, std::uint32_t crc) noexcept {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint64_t c = ~crc;
  while (size >= 8) {
    std::uint64_t v;
    std::memcpy(&v, p, 8);
    c = _mm_crc32_u64(c, v);
    p += 8;
    size -= 8;
  }
  auto c32 = static_cast<std::uint32_t>(c);
  while (size--) c32 = _mm_crc32_u8(c32, *p++);
  return ~c32;
}
#elif defined(__aarch64__)
bool detect_hardware() noexcept { return (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0; }

__attribute__((target("+crc"))) std::uint32_t crc_hw(const void* data, std::size_t size, std::uint32_t crc) noexcept {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint32_t c = ~crc;
  while (size >= 8) {
    std::uint64_t v;
    std::memcpy(&v, p, 8);
    c = __builtin_aarch64_crc32cx(c, v);
    p += 8;
    size -= 8;
  }
  while (size--) c = __builtin_aarch64_crc32cb(c, *p++);
  return ~c;
}
#else
bool detect_hardware() noexcept { return false; }
std::uint32_t crc_hw(const void*, std::size_t, std::uint32_t) noexcept { return 0; }
#endif

const bool kHardware = detect_hardware();

std::uint32_t reflect32(std::uint32_t v) noexcept {
  std::uint32_t r = 0;
  for (int i = 0; i < 32; ++i, v >>= 1) r = (r << 1) | (v & 1);
  return r;
}

}  // namespace

std::uint32_t crc32c_portable(const void* data, std::size_t size, std::uint32_t crc) noexcept {
  // Boost's running remainder is the pre-final-xor value; continuing from a finished CRC
  // means undoing the final xor.
  // Boost's constructor takes the remainder in the register's (reflected) bit order.
  Crc32cBoost engine(reflect32(crc ^ 0xFFFFFFFFu));
  engine.process_bytes(data, size);
  return engine.checksum();
}

std::uint32_t crc32c(const void* data, std::size_t size, std::uint32_t crc) noexcept {
  return kHardware ? crc_hw(data, size, crc) : crc32c_portable(data, size, crc);
}

bool crc32c_hardware() noexcept { return kHardware; }

}  // namespace objprof
