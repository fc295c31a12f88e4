// Event counts beside time (perf_event_open): what a timed run executed and where it waited,
// so two runs that differ in time can be told apart by cause. User-mode hardware counters
// (cycles, instructions, cache and branch misses) where the machine exposes them, which many
// VMs do not; software counters (page faults, context switches) everywhere Linux runs.
// Counts cover the calling thread and the threads it starts afterwards (inherit), which are
// added in when they exit: the ladders' mutator threads end before a run returns.
#pragma once

#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace objprof::bench {

class PerfCounters {
 public:
  enum Event { kCycles, kInstructions, kCacheMisses, kBranchMisses, kPageFaults, kContextSwitches, kEvents };
  using Counts = std::array<std::uint64_t, kEvents>;

  static const char* name(Event e) {
    static constexpr const char* kNames[kEvents] = {"cycles", "insns", "cache_misses", "branch_misses",
                                                    "page_faults", "ctx_switches"};
    return kNames[e];
  }

  // OBJPROF_BENCH_NO_PERF=1: count nothing (to check that counting does not change the time).
  PerfCounters() {
    fd_.fill(-1);
    if (const char* off = std::getenv("OBJPROF_BENCH_NO_PERF"); off != nullptr && *off != '\0' && *off != '0') {
      why_ = "OBJPROF_BENCH_NO_PERF is set";
      return;
    }
    for (int e = 0; e < kEvents; ++e) {
      const bool sw = e >= kPageFaults;
      perf_event_attr a{};
      a.size = sizeof a;
      a.type = sw ? PERF_TYPE_SOFTWARE : PERF_TYPE_HARDWARE;
      static constexpr std::uint64_t kConfig[kEvents] = {
          PERF_COUNT_HW_CPU_CYCLES,   PERF_COUNT_HW_INSTRUCTIONS,   PERF_COUNT_HW_CACHE_MISSES,
          PERF_COUNT_HW_BRANCH_MISSES, PERF_COUNT_SW_PAGE_FAULTS, PERF_COUNT_SW_CONTEXT_SWITCHES};
      a.config = kConfig[e];
      a.exclude_kernel = sw ? 0 : 1;  // paranoid level 2 allows user-mode counts only
      a.exclude_hv = 1;
      a.inherit = 1;
      fd_[e] = static_cast<int>(::syscall(SYS_perf_event_open, &a, 0, -1, -1, 0));
      if (fd_[e] < 0 && why_.empty()) why_ = std::strerror(errno);
    }
  }
  ~PerfCounters() {
    for (int fd : fd_)
      if (fd >= 0) ::close(fd);
  }
  PerfCounters(const PerfCounters&) = delete;
  PerfCounters& operator=(const PerfCounters&) = delete;

  bool available(Event e) const { return fd_[e] >= 0; }
  Counts read() const {
    Counts c{};
    for (int e = 0; e < kEvents; ++e) {
      std::uint64_t v = 0;
      if (fd_[e] >= 0 && ::read(fd_[e], &v, sizeof v) == static_cast<ssize_t>(sizeof v)) c[e] = v;
    }
    return c;
  }
  // Once per process, on stderr: which events this machine does not count, and why.
  void report_unavailable_once() const {
    static bool said = false;
    if (said) return;
    said = true;
    std::string missing;
    for (int e = 0; e < kEvents; ++e)
      if (fd_[e] < 0) missing += std::string(missing.empty() ? "" : ", ") + name(static_cast<Event>(e));
    if (!missing.empty())
      std::fprintf(stderr, "perf counters not available here: %s (perf_event_open: %s)\n", missing.c_str(), why_.c_str());
  }

 private:
  std::array<int, kEvents> fd_;
  std::string why_;
};

}  // namespace objprof::bench
