// Build-wide constants and the few macros objprof's inline fast paths need.
#pragma once

#include <cstddef>
#include <cstdint>

#define OBJPROF_VERSION_MAJOR 0
#define OBJPROF_VERSION_MINOR 1

#if defined(__GNUC__)
#define OBJPROF_LIKELY(x) __builtin_expect(!!(x), 1)
#define OBJPROF_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define OBJPROF_ALWAYS_INLINE inline __attribute__((always_inline))
#define OBJPROF_NOINLINE __attribute__((noinline))
#else
#define OBJPROF_LIKELY(x) (x)
#define OBJPROF_UNLIKELY(x) (x)
#define OBJPROF_ALWAYS_INLINE inline
#define OBJPROF_NOINLINE
#endif

namespace objprof {

// Size of a cache line on every target we build for (x86_64, arm64). Fixed rather than
// std::hardware_destructive_interference_size so that layouts do not change with -mtune.
inline constexpr std::size_t kCacheLine = 64;

}  // namespace objprof
