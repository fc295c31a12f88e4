// LeakGroup: the online leak report's entry, one per allocation site and type.
//
// A site that leaks leaks many objects; one line per object fills a screen with the same site
// and hides the others. The profiler groups its stale objects by (site, type) and ranks the
// groups by score = the sum of size x idle epochs over their stale objects (the offline
// analyzer's ranking, docs/analyzer.md): big and long-forgotten first, so a cold-but-live
// table idle for 4 GCs does not outrank a leak idle for 160.
#pragma once

#include "objprof/heap_space.h"
#include "objprof/root_path.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace objprof {

struct LeakGroup {
  std::uint32_t site_id = 0, type_id = 0;
  std::string_view method;     // the site's method; empty if the site was never defined
  std::uint32_t bytecode_offset = 0;
  std::string_view type_name;  // empty if the type was never defined
  // Its objects that are stale at `epoch`'s end.
  std::uint64_t objects = 0, bytes = 0;
  std::uint64_t new_objects = 0;  // of them, found stale at this check (a callback's news)
  std::uint64_t score = 0;        // sum of size x idle epochs
  // Idle span, in epochs since the last access: the most stale object's and the median.
  std::uint64_t oldest_idle_epochs = 0, typical_idle_epochs = 0;
  // Bytes the most stale object's owner thread allocated since that object's last access.
  std::uint64_t oldest_idle_bytes = 0;
  // The first and the latest epoch whose end found stale objects of this group.
  std::uint64_t first_detected = 0, last_detected = 0;
  // The most stale object (ties: the larger, then the lower address): the one to look at.
  Address sample = 0;
  std::uint64_t sample_size = 0;
  std::uint64_t epoch = 0;  // the epoch whose end this view describes
  // Why it is still alive: a path from a GC root to one stale object of the group (found at
  // the GC that first asked; path->steps.back() may be another object than `sample`), or null
  // (no heap walker, or no path found yet). Owned by the profiler, valid while it lives.
  const RootPath* path = nullptr;
};

// "objprof: possible leak: 12 objects (48 KiB) of Node allocated at ..." — the default printer.
std::string format_leak_group(const LeakGroup& group);

}  // namespace objprof
