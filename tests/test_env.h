// Facts about where the test suite runs, for tests that must size their work.
#pragma once

#include <cstdlib>
#include <cstring>

namespace objprof::test {

// True when the tests run under an emulator (qemu-user for the arm64 build; set by ctest).
// Emulated multi-threaded atomics are very slow there, so concurrent tests use fewer
// iterations; they assert the same properties.
inline bool emulated() {
  const char* v = std::getenv("OBJPROF_TEST_EMULATED");
  return v != nullptr && std::strcmp(v, "0") != 0;
}

// Which sanitizer this build has, for the preprocessor (tests that declare the sanitizers'
// own interface) and as constants below. GCC defines __SANITIZE_*__; clang answers
// __has_feature.
#if defined(__has_feature)
#define OBJPROF_TEST_HAS_FEATURE(f) __has_feature(f)
#else
#define OBJPROF_TEST_HAS_FEATURE(f) 0
#endif
#if defined(__SANITIZE_ADDRESS__) || OBJPROF_TEST_HAS_FEATURE(address_sanitizer)
#define OBJPROF_TEST_ASAN 1
#else
#define OBJPROF_TEST_ASAN 0
#endif
#if defined(__SANITIZE_THREAD__) || OBJPROF_TEST_HAS_FEATURE(thread_sanitizer)
#define OBJPROF_TEST_TSAN 1
#else
#define OBJPROF_TEST_TSAN 0
#endif

// True in the ThreadSanitizer build. TSan is there for concurrent code: a test may leave its
// single-threaded cases to the other builds (they run them all), where TSan would only make
// them 5-15x slower without anything to find.
inline constexpr bool thread_sanitizer() { return OBJPROF_TEST_TSAN != 0; }

// True in the AddressSanitizer build (ASan+UBSan).
inline constexpr bool address_sanitizer() { return OBJPROF_TEST_ASAN != 0; }

// Divides a workload size when emulated (never below 1).
inline std::size_t scaled(std::size_t native, std::size_t divisor = 16) {
  if (!emulated()) return native;
  return native / divisor > 0 ? native / divisor : 1;
}

}  // namespace objprof::test
