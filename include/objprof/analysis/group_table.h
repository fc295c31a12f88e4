// Per allocation site, per type and per thread tables (InMemProfiler's per-class summary, the
// thesis' class and thread scopes): allocated count and bytes, live count and bytes at the
// end, and the lifetime distribution of the dead objects in configurable buckets.
#pragma once

#include "objprof/analysis/lifetime_buckets.h"
#include "objprof/analysis/object_metrics.h"
#include "objprof/analysis/trace_analysis.h"

#include <cstdint>
#include <string>
#include <vector>

namespace objprof::analysis {

enum class GroupBy : std::uint8_t { kSite, kType, kThread };
const char* group_by_name(GroupBy g) noexcept;  // "site", "type", "thread"

struct GroupRow {
  std::uint32_t index = 0;  // into TraceAnalysis::sites / types / threads
  std::uint32_t id = 0;     // the trace's id
  std::string name;         // site label, type name or thread name
  std::uint64_t allocated_objects = 0, allocated_bytes = 0;
  std::uint64_t live_objects = 0, live_bytes = 0;
  std::uint64_t dead_objects = 0;
  double mean_lifetime_gcs = 0, mean_lifetime_bytes = 0;  // over dead objects; 0 if none died
  std::vector<std::uint64_t> lifetime_buckets;            // dead objects per bucket
};

struct GroupTable {
  GroupBy by = GroupBy::kSite;
  std::vector<GroupRow> rows;  // by allocated bytes, largest first; at most `top`
  std::size_t groups = 0;      // groups with at least one object, before the cut
  GroupRow total;              // every group together (name "total")
};

class GroupTableBuilder {
 public:
  GroupTableBuilder(const TraceAnalysis& a, GroupBy by, const LifetimeBuckets& buckets);
  void add(ObjectId o, const ObjectMetrics& m);
  // The same, with the object's lifetime bucket already known (buckets.index of its lifetime
  // on the buckets' clock; ignored for live objects): the report computes it once for its
  // three tables.
  void add(ObjectId o, const ObjectMetrics& m, std::size_t bucket);
  void merge(const GroupTableBuilder& other);
  GroupTable finish(std::size_t top) const;

 private:
  struct Acc {
    std::uint64_t allocated_objects = 0, allocated_bytes = 0, live_objects = 0, live_bytes = 0, dead = 0;
    std::uint64_t lifetime_gcs = 0, lifetime_bytes = 0;
  };
  const TraceAnalysis* a_;
  GroupBy by_;
  const LifetimeBuckets* buckets_;
  std::vector<Acc> acc_;
  std::vector<std::uint64_t> hist_;  // groups x buckets
};

GroupTable group_table(const TraceAnalysis& a, GroupBy by, const LifetimeBuckets& buckets,
                       const ObjectFilter& filter = {}, std::size_t top = SIZE_MAX);

}  // namespace objprof::analysis
