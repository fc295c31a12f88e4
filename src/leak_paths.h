// LeakPaths (private): the profiler's paths from roots to suspected leaks. At gc_end the
// profiler hands it one sample object per (site, type) group with newly stale objects; groups
// without a path yet (and with attempts left) are searched in one walk of the runtime's heap
// (path_search.h), each search is written to the trace as a path record, and the paths found
// are kept for the group's reports (LeakGroup::path, LeakReport::path). Nothing is walked when nothing is asked.
#pragma once

#include "objprof/event_buffer.h"
#include "objprof/path_search.h"

#include <cstdint>
#include <functional>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace objprof::internal {

class LeakPaths {
 public:
  // A stale sample of the (site, type) group. The first sample of a group in a GC is the one
  // searched (gc_end passes the groups' most stale objects, so the choice is deterministic).
  void request(Address sample, std::uint32_t site, std::uint32_t type, std::uint32_t max_attempts);
  // One walk for this GC's requests (none: the walker is not called). A declined walk
  // (begin_walk() false) costs no attempt: the next GC with new suspects asks again.
  void search(HeapWalker& walker, const PathSearchOptions& options,
              const std::function<std::string_view(std::uint32_t type)>& type_name);
  // One path record per search of the last search() (docs/trace-format.md), control stream;
  // each is written once.
  void write(EventBuffer& out, std::uint64_t epoch);
  // The group's path, or null. Stable: a path is never replaced or dropped.
  const RootPath* path(std::uint32_t site, std::uint32_t type) const;
  std::uint64_t searches() const noexcept { return searches_; }

 private:
  struct Request {
    Address sample;
    std::uint32_t site, type;
    std::uint64_t key() const noexcept { return std::uint64_t{site} << 32 | type; }
  };
  struct Done {
    Request request;
    PathSearchResult result;
  };
  std::vector<Request> requests_;
  std::vector<Done> done_;  // the last search()'s, for write()
  // Keyed by site << 32 | type.
  std::unordered_map<std::uint64_t, RootPath> paths_;       // node-based: pointers stay valid
  std::unordered_map<std::uint64_t, std::uint32_t> tries_;  // searches per group without a path
  std::uint64_t searches_ = 0;
};

}  // namespace objprof::internal
