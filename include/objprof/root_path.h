// RootPath: a chain of references from a GC root to an object, the answer to "why is this
// object still alive?". The path search (path_search.h) produces it, the profiler keeps one
// per suspected leak (LeakReport::path) and writes it to the trace (a path record,
// docs/trace-format.md), and the offline analyzer shows it per leak site.
#pragma once

#include "objprof/heap_walk.h"

#include <cstdint>
#include <string>
#include <vector>

namespace objprof {

struct PathStep {
  Address addr = 0;
  std::uint32_t type_id = kUnknownType;
  // Filled by whoever knows the type names (the profiler, the analyzer); may stay empty.
  std::string type_name;
  // The reference of the previous step (or the root, for the first step) that leads here: a
  // field name, or "[i]" for element i. Empty for the first step.
  std::string via;
};

struct RootPath {
  RootKind root_kind = RootKind::kOther;
  std::string root_name;
  // The root's referent first, the object searched for last.
  std::vector<PathStep> steps;
  // Steps of the path left out after the last one here: a path record cut to fit one trace
  // chunk keeps its first steps (nearest the root, which name the container that holds on).
  std::uint32_t cut_steps = 0;
};

// How a search ended (also a field of the trace's path record).
enum class PathStatus : std::uint8_t {
  kFound = 0,
  kUnreachable = 1,    // every object reachable within the depth limit was visited
  kObjectBudget = 2,   // PathSearchOptions::max_objects objects visited first
  kDepthLimit = 3,     // not within max_depth steps of a root; deeper objects were not visited
};
inline constexpr std::uint8_t kMaxPathStatus = 3;
// "found", "unreachable", "object budget exhausted", "depth limit reached".
const char* path_status_name(PathStatus status) noexcept;

// One line: `static 0 -> (Holder[] 0x7f0000010)[2] -> (Holder 0x7f0000100).payload -> (Leak 0x7f0000400)`:
// the root, then each object on the path (type name, or "type#ID", or "?") followed by the
// reference taken out of it.
std::string format_path(const RootPath& path);

}  // namespace objprof
