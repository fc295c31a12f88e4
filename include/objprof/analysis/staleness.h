// The staleness rule, the same as the online profiler's (include/objprof/profiler.h): an
// object alive at the end is stale when
// - its last use (last access, or birth) is at least `epochs` (GC_K) epochs before the last
//   epoch with access bits (end_epoch - 1);
// - a full (not minor) GC ran since its last use: a minor GC does not show an old object alive;
// - and its owner, the thread that allocated it, allocated at least `bytes` since the end of
//   the epoch of its last use (automatic: as much as the owner allocated in its busiest epoch).
//   A thread that ended before the judged epoch hands its objects to the program's clock (every
//   thread's bytes, the GC records' clock), as the profiler does at the next gc_begin.
// A thread that was not scheduled, or a storm of GCs with little allocation, does not age an
// object: docs/analyzer.md, "Staleness".
#pragma once

#include "objprof/analysis/object_metrics.h"
#include "objprof/analysis/trace_analysis.h"

#include <cstdint>

namespace objprof::analysis {

struct StaleRule {
  static constexpr std::uint64_t kAutoBytes = ~std::uint64_t{0};
  std::uint32_t epochs = 4;
  std::uint64_t bytes = kAutoBytes;  // 0: GC_K alone
};

struct OwnerProgress {
  std::uint64_t idle_bytes = 0;  // the owner's bytes since the end of the last use's epoch
  std::uint64_t needed = 0;      // what the rule asks of them
};

// For an object alive at the end (judged at end_epoch - 1).
inline OwnerProgress owner_progress(const TraceAnalysis& a, const ObjectMetrics& m, std::uint64_t rule_bytes) {
  OwnerProgress p;
  if (a.end_epoch == 0) return p;
  const std::uint32_t judged = a.end_epoch - 1;
  const Thread& owner = a.threads[m.thread];
  const bool program = owner.end_epoch != kNoEpoch && owner.end_epoch <= judged;
  const std::uint64_t now = program ? a.gc_clock(judged) : owner.bytes_by(judged);
  const std::uint64_t then = program ? a.gc_clock(m.last_use_epoch) : owner.bytes_by(m.last_use_epoch);
  p.idle_bytes = now > then ? now - then : 0;
  p.needed = rule_bytes != StaleRule::kAutoBytes ? rule_bytes
             : program                          ? a.busiest_epoch_bytes
                                                : owner.busiest_epoch_bytes;
  return p;
}

inline bool is_stale(const TraceAnalysis& a, const ObjectMetrics& m, const StaleRule& rule) {
  if (!m.alive || m.idle_epochs < rule.epochs) return false;
  if (a.last_full_gc == kNoEpoch || a.last_full_gc < m.last_use_epoch) return false;
  if (rule.bytes == 0) return true;
  const OwnerProgress p = owner_progress(a, m, rule.bytes);
  return p.idle_bytes >= p.needed;
}

}  // namespace objprof::analysis
