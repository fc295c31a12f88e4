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

// Divides a workload size when emulated (never below 1).
inline std::size_t scaled(std::size_t native, std::size_t divisor = 16) {
  if (!emulated()) return native;
  return native / divisor > 0 ? native / divisor : 1;
}

}  // namespace objprof::test
