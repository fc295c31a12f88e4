// CPU-time clocks for benchmarks on a shared machine. With other processes competing for the
// cores, wall time includes the time a run spent preempted, which makes side-by-side ratios
// noisy; the CPU time a run consumed does not. Benchmarks that use these say so.
#pragma once

#include <ctime>

namespace objprof::bench {

inline double cpu_seconds(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// All threads of this process (mutators and any worker threads).
inline double process_cpu_seconds() { return cpu_seconds(CLOCK_PROCESS_CPUTIME_ID); }

}  // namespace objprof::bench
