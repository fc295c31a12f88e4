// The bounded shortest-path search from GC roots to objects, over a runtime's HeapWalker.
//
// Breadth-first from every root at once (roots in the walker's order, references in each
// object's order), so the path found is a shortest one, and among shortest ones the first in
// that order: the same heap always gives the same path. The budget bounds the pause it adds to
// a GC: at most max_objects distinct objects are visited (about 24 bytes each while the search
// runs, freed after) and nothing deeper than max_depth is followed. Several targets share one
// walk. Labels, type ids and the root's name are asked of the walker only for the path found:
// the search itself keeps per object its address, its parent and which of the parent's
// references led to it.
#pragma once

#include "objprof/heap_walk.h"
#include "objprof/root_path.h"

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace objprof {

struct PathSearchOptions {
  // Distinct objects visited before the search gives up (kObjectBudget).
  std::uint64_t max_objects = 1'000'000;
  // Longest path followed, in objects: a root's referent is at depth 1 (kDepthLimit).
  std::uint32_t max_depth = 100;
};

struct PathSearchResult {
  PathStatus status = PathStatus::kUnreachable;
  RootPath path;  // when found (type names left empty)
  std::uint64_t objects_visited = 0;  // of the whole walk, shared by its targets
};

// One walk (begin_walk .. end_walk) for every target: results[i] answers targets[i]. Empty when
// the walker declines the walk (begin_walk() returned false); the walker is not called at all
// when there are no targets.
std::vector<PathSearchResult> find_paths(HeapWalker& walker, std::span<const Address> targets,
                                         const PathSearchOptions& options = {});
// One target; nullopt when the walker declines the walk.
std::optional<PathSearchResult> find_path(HeapWalker& walker, Address target, const PathSearchOptions& options = {});

}  // namespace objprof
