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

// True in the ThreadSanitizer build. TSan is there for concurrent code: a test may leave its
// single-threaded cases to the other builds (they run them all), where TSan would only make
// them 5-15x slower without anything to find.
inline constexpr bool thread_sanitizer() {
#if defined(__SANITIZE_THREAD__)
  return true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
  return true;
#else
  return false;
#endif
#else
  return false;
#endif
}

// True in the AddressSanitizer build (ASan+UBSan).
inline constexpr bool address_sanitizer() {
#if defined(__SANITIZE_ADDRESS__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return true;
#else
  return false;
#endif
#else
  return false;
#endif
}

// Divides a workload size when emulated (never below 1).
inline std::size_t scaled(std::size_t native, std::size_t divisor = 16) {
  if (!emulated()) return native;
  return native / divisor > 0 ? native / divisor : 1;
}

}  // namespace objprof::test
