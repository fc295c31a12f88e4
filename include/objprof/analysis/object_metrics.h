// Derived per-object metrics: lifetime, last use and staleness, on both clocks.
//
// Definitions (docs/analyzer.md):
// - lifetime_gcs: GCs survived. An object born in epoch b and freed by the GC of epoch d
//   survived d - b GCs; one alive at the end survived end_epoch - b.
// - lifetime_bytes: bytes allocated between its birth and its death (the GC's clock) or the end.
// - last_use_epoch: the last epoch with an access, or its birth epoch if that is later or it
//   was never accessed (allocation counts as a use, as in the online tracker).
// - idle_epochs (staleness): completed epochs since the last use: d - last_use at death, or
//   (end_epoch - 1) - last_use for a live object (the final epoch has no access bits).
// - idle_bytes: bytes allocated since the last use (from the end of that epoch's mutator
//   phase, i.e. the GC clock, or the birth clock for an unaccessed object): a lower bound.
#pragma once

#include "objprof/analysis/trace_analysis.h"

#include <algorithm>
#include <cstdint>

namespace objprof::analysis {

// What every view needs to know about one object, read once per object and pass.
struct ObjectMetrics {
  std::uint64_t size = 0;  // footprint (ChainStore::footprint_of)
  std::uint32_t site = 0, type = 0, thread = 0;  // indexes into the analysis' tables
  bool alive = false;
  std::uint32_t lifetime_gcs = 0;
  std::uint64_t lifetime_bytes = 0;
  std::uint32_t last_use_epoch = 0;
  std::uint32_t idle_epochs = 0;
  std::uint64_t idle_bytes = 0;
};

inline ObjectMetrics object_metrics(const TraceAnalysis& a, ObjectId o) {
  const ChainStore& c = a.objects;
  ObjectMetrics m;
  m.size = c.footprint_of(o);
  const AllocContext& ctx = a.contexts[c.context(o)];
  m.site = ctx.site;
  m.type = ctx.type;
  m.thread = ctx.thread;
  m.alive = c.alive(o);
  const std::uint32_t birth = c.birth_epoch(o);
  const std::uint32_t stop = m.alive ? a.end_epoch : c.death_epoch(o);
  const std::uint64_t stop_clock = m.alive ? a.end_bytes : a.gc_clock(c.death_epoch(o));
  m.lifetime_gcs = stop > birth ? stop - birth : 0;
  m.lifetime_bytes = stop_clock > c.birth_bytes(o) ? stop_clock - c.birth_bytes(o) : 0;
  const std::uint32_t last = c.last_access(o);
  m.last_use_epoch = last == kNoEpoch ? birth : std::max(last, birth);
  // The last epoch whose bits are known.
  const std::uint32_t judged = m.alive ? (a.end_epoch > 0 ? a.end_epoch - 1 : 0) : c.death_epoch(o);
  m.idle_epochs = judged > m.last_use_epoch ? judged - m.last_use_epoch : 0;
  const std::uint64_t use_clock = (last == kNoEpoch || last < birth) ? c.birth_bytes(o) : std::max(c.birth_bytes(o), a.gc_clock(last));
  m.idle_bytes = stop_clock > use_clock ? stop_clock - use_clock : 0;
  return m;
}

// Which objects the views look at. --min-age=N leaves out objects that lived fewer than N GCs
// (dead ones at death, live ones at the end): the short-lived bulk that hides the rest.
struct ObjectFilter {
  std::uint32_t min_age_gcs = 0;
  bool keep(const ObjectMetrics& m) const noexcept { return m.lifetime_gcs >= min_age_gcs; }
};

}  // namespace objprof::analysis
