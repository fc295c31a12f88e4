// LeakGrouper (private): folds the stale check's objects into LeakGroups, ranked.
#pragma once

#include "objprof/leak_group.h"

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace objprof::internal {

struct StaleObject {
  Address addr = 0;
  std::uint64_t size = 0;
  std::uint32_t site = 0, type = 0;
  std::uint64_t idle_epochs = 0, idle_bytes = 0;
  bool is_new = false;
};

// The group's detections so far, kept by the profiler across GCs.
struct Detection {
  std::uint64_t first = 0, last = 0;
};

// Groups `objects` by (site, type) and ranks them: score, then bytes, then site and type ids,
// so the order does not depend on the tracker's layout. Each group takes its first/last
// detection from `detections` (this check's epoch if never detected). Names are left for the
// caller to fill.
std::vector<LeakGroup> group_stale(std::vector<StaleObject>& objects, std::uint64_t epoch,
                                   const std::unordered_map<std::uint64_t, Detection>& detections);

// gc_end's check: groups with new objects record this detection (first/last) in `detections`.
void record_detections(std::vector<LeakGroup>& groups, std::uint64_t epoch,
                       std::unordered_map<std::uint64_t, Detection>& detections);

// Orders stale objects for the per-object view: most stale bytes first (size x idle epochs),
// then by address.
void rank_objects(std::vector<StaleObject>& objects);

}  // namespace objprof::internal
