// CRC32C: hardware instructions where the CPU has them, Boost.CRC everywhere else; the path
// is chosen once (crc32c.h lists them).
#include "objprof/crc32c.h"

#include <boost/crc.hpp>

#include <bit>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

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

// One CRC32C step over 8 bytes, on the raw (not inverted) state.
#if defined(__x86_64__)
bool detect_hardware() noexcept {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  return (c & bit_SSE4_2) != 0;
}
#define OBJPROF_CRC_TARGET __attribute__((target("sse4.2")))
OBJPROF_CRC_TARGET inline std::uint32_t step64(std::uint32_t s, std::uint64_t v) {
  return static_cast<std::uint32_t>(_mm_crc32_u64(s, v));
}
OBJPROF_CRC_TARGET inline std::uint32_t step8(std::uint32_t s, std::uint8_t v) { return _mm_crc32_u8(s, v); }
#elif defined(__aarch64__)
bool detect_hardware() noexcept { return (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0; }
#define OBJPROF_CRC_TARGET __attribute__((target("+crc")))
OBJPROF_CRC_TARGET inline std::uint32_t step64(std::uint32_t s, std::uint64_t v) { return __builtin_aarch64_crc32cx(s, v); }
OBJPROF_CRC_TARGET inline std::uint32_t step8(std::uint32_t s, std::uint8_t v) { return __builtin_aarch64_crc32cb(s, v); }
#endif

#if defined(__x86_64__) || defined(__aarch64__)
// The CRC instruction has a latency of ~3 cycles but a throughput of one per cycle, so one
// dependent chain runs at a third of the possible speed. Large inputs are cut into blocks of
// three independent streams; the streams are joined with the CRC's linearity:
//   state(s, A || B) = shift(state(s, A), |B|) ^ state(0, B)
// where shift(x, n) is the state after n zero bytes starting from x, a linear map applied
// here with four 256-entry tables (built once with the instruction itself). Blocks of three
// 1 KiB streams, then of three 256-byte streams (a chunk of a few KiB: a GC's bitmap dump, a
// mutator's last 4 KiB), then one stream for the last < 768 bytes.
constexpr std::size_t kStreamBytes = 1024, kShortStreamBytes = 256;

struct ShiftTable {
  std::uint32_t t[4][256];
  std::uint32_t apply(std::uint32_t x) const noexcept {
    return t[0][x & 0xFF] ^ t[1][(x >> 8) & 0xFF] ^ t[2][(x >> 16) & 0xFF] ^ t[3][x >> 24];
  }
};

// The state after n zero bytes, bit by bit (reflected CRC-32C, polynomial 0x82F63B78): what
// the CRC instruction computes for zero data, in a form the compiler can evaluate.
constexpr std::uint32_t zeros(std::uint32_t s, std::size_t n) {
  for (std::size_t i = 0; i < 8 * n; ++i) s = (s >> 1) ^ ((s & 1u) != 0 ? 0x82F63B78u : 0u);
  return s;
}

// shift(x, n) is linear in x, so the 1024 entries follow from the 32 single-bit states: an
// entry is the xor of the entries of its bits (one xor each, from the entry without its
// lowest bit). Computed at compile time: built at run time by shifting every entry through n
// zero bytes they cost ~2M instructions at the first CRC of every process, a fixed cost that
// dominated short traced runs.
constexpr ShiftTable make_shift(std::size_t n) {
  std::uint32_t bit[32] = {};
  for (int j = 0; j < 32; ++j) bit[j] = zeros(std::uint32_t{1} << j, n);
  ShiftTable st{};
  for (int k = 0; k < 4; ++k)
    for (std::uint32_t b = 1; b < 256; ++b) st.t[k][b] = st.t[k][b & (b - 1)] ^ bit[8 * k + std::countr_zero(b)];
  return st;
}

struct Shifts {
  ShiftTable one, two;
};
constexpr Shifts kShifts{make_shift(kStreamBytes), make_shift(2 * kStreamBytes)};
constexpr Shifts kShortShifts{make_shift(kShortStreamBytes), make_shift(2 * kShortStreamBytes)};

// One instruction stream, on the raw state.
OBJPROF_CRC_TARGET std::uint32_t crc_hw1(const unsigned char* p, std::size_t size, std::uint32_t s) noexcept {
  while (size >= 8) {
    std::uint64_t v;
    std::memcpy(&v, p, 8);
    s = step64(s, v);
    p += 8;
    size -= 8;
  }
  while (size--) s = step8(s, *p++);
  return s;
}

OBJPROF_CRC_TARGET std::uint32_t crc_hw(const void* data, std::size_t size, std::uint32_t crc) noexcept {
  return ~crc_hw1(static_cast<const unsigned char*>(data), size, ~crc);
}

// Blocks of three streams of kBytes each while they last, on the raw state `s`; `p` and
// `size` move past them.
template <std::size_t kBytes>
OBJPROF_CRC_TARGET inline std::uint32_t crc_streams3(const unsigned char*& p, std::size_t& size, std::uint32_t s,
                                                     const Shifts& sh) noexcept {
  while (size >= 3 * kBytes) {
    std::uint32_t s1 = 0, s2 = 0;
    for (std::size_t i = 0; i < kBytes; i += 8) {
      std::uint64_t a, b, c;
      std::memcpy(&a, p + i, 8);
      std::memcpy(&b, p + kBytes + i, 8);
      std::memcpy(&c, p + 2 * kBytes + i, 8);
      s = step64(s, a);
      s1 = step64(s1, b);
      s2 = step64(s2, c);
    }
    s = sh.two.apply(s) ^ sh.one.apply(s1) ^ s2;
    p += 3 * kBytes;
    size -= 3 * kBytes;
  }
  return s;
}

OBJPROF_CRC_TARGET std::uint32_t crc_hw3(const void* data, std::size_t size, std::uint32_t crc) noexcept {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint32_t s = ~crc;
  if (size >= 3 * kStreamBytes) s = crc_streams3<kStreamBytes>(p, size, s, kShifts);
  if (size >= 3 * kShortStreamBytes) s = crc_streams3<kShortStreamBytes>(p, size, s, kShortShifts);
  return ~crc_hw1(p, size, s);
}
#else
bool detect_hardware() noexcept { return false; }
std::uint32_t crc_hw(const void*, std::size_t, std::uint32_t) noexcept { return 0; }
std::uint32_t crc_hw3(const void*, std::size_t, std::uint32_t) noexcept { return 0; }
#endif

// Function-local statics: correct even when another file's static initialiser writes a trace.
bool has_hardware() noexcept {
  static const bool hardware = detect_hardware();
  return hardware;
}

Crc32cPath best_path() noexcept { return has_hardware() ? Crc32cPath::kHardware3 : Crc32cPath::kPortable; }

// The best path, or the one OBJPROF_CRC32C names if this CPU can run it.
Crc32cPath choose_path() noexcept {
  const char* forced = std::getenv("OBJPROF_CRC32C");
  if (forced == nullptr || *forced == '\0') return best_path();
  const Result<Crc32cPath> p = crc32c_path_from_name(forced);
  if (!p.ok()) {
    std::fprintf(stderr, "objprof: OBJPROF_CRC32C: %s; using %s\n", p.error().message.c_str(),
                 std::string(crc32c_path_name(best_path())).c_str());
    return best_path();
  }
  if (!crc32c_supported(*p)) {
    std::fprintf(stderr, "objprof: OBJPROF_CRC32C=%s: this CPU has no CRC32C instruction; using %s\n", forced,
                 std::string(crc32c_path_name(best_path())).c_str());
    return best_path();
  }
  return *p;
}

Crc32cPath chosen_path() noexcept {
  static const Crc32cPath chosen = choose_path();
  return chosen;
}

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

std::uint32_t crc32c_with(Crc32cPath path, const void* data, std::size_t size, std::uint32_t crc) noexcept {
  switch (path) {
    case Crc32cPath::kHardware:
      if (has_hardware()) return crc_hw(data, size, crc);
      break;
    case Crc32cPath::kHardware3:
      if (has_hardware()) return crc_hw3(data, size, crc);
      break;
    case Crc32cPath::kPortable:
      break;
  }
  return crc32c_portable(data, size, crc);  // a path this CPU lacks falls back, never faults
}

std::uint32_t crc32c(const void* data, std::size_t size, std::uint32_t crc) noexcept {
  return crc32c_with(chosen_path(), data, size, crc);
}

bool crc32c_supported(Crc32cPath path) noexcept { return path == Crc32cPath::kPortable || has_hardware(); }
Crc32cPath crc32c_path() noexcept { return chosen_path(); }
bool crc32c_hardware() noexcept { return chosen_path() != Crc32cPath::kPortable; }

std::string_view crc32c_path_name(Crc32cPath path) noexcept {
  switch (path) {
    case Crc32cPath::kPortable: return "portable";
    case Crc32cPath::kHardware: return "hardware";
    case Crc32cPath::kHardware3: return "hardware3";
  }
  return "?";
}

Result<Crc32cPath> crc32c_path_from_name(std::string_view name) {
  for (Crc32cPath p : kAllCrc32cPaths)
    if (crc32c_path_name(p) == name) return p;
  return make_error(ErrorCode::kInvalidArgument,
                    "unknown CRC32C path '" + std::string(name) + "' (portable, hardware, hardware3)");
}

}  // namespace objprof
