// Live-heap diff between two epochs by object identity. The heap "at epoch e" is what was live
// right after the GC of epoch e (e = end_epoch: at the end of the trace). Objects are matched
// by their chain, not their address: an object the collector moved between the two points is
// the same object, and a new object at a dead one's address is a different one.
#pragma once

#include "objprof/analysis/object_metrics.h"
#include "objprof/analysis/trace_analysis.h"
#include "objprof/result.h"

#include <cstdint>
#include <string>
#include <vector>

namespace objprof::analysis {

struct DiffCounts {
  std::uint64_t objects = 0, bytes = 0;
};

struct HeapDiffRow {
  std::uint32_t site = 0;  // index into TraceAnalysis::sites
  DiffCounts kept;     // live at both
  DiffCounts died;     // live at `from`, dead by `to`
  DiffCounts born;     // born after `from`, live at `to`
  std::int64_t net_bytes() const noexcept {
    return static_cast<std::int64_t>(born.bytes) - static_cast<std::int64_t>(died.bytes);
  }
};

struct HeapDiff {
  std::uint32_t from = 0, to = 0;
  DiffCounts kept, died, born;  // totals over every site
  std::vector<HeapDiffRow> rows;  // by net growth in bytes, largest first; at most `top`
};

class HeapDiffBuilder {
 public:
  HeapDiffBuilder(const TraceAnalysis& a, std::uint32_t from, std::uint32_t to);
  void add(ObjectId o, const ObjectMetrics& m);
  void merge(const HeapDiffBuilder& other);
  HeapDiff finish(std::size_t top) const;

 private:
  const TraceAnalysis* a_;
  std::uint32_t from_, to_;
  std::vector<HeapDiffRow> rows_;  // per site
};

// Errors: from > to, or an epoch past the end (kInvalidArgument).
Result<HeapDiff> heap_diff(const TraceAnalysis& a, std::uint32_t from, std::uint32_t to, const ObjectFilter& filter = {},
                           std::size_t top = SIZE_MAX);
// Parses "A:B" where each side is an epoch number or "end".
Result<std::pair<std::uint32_t, std::uint32_t>> parse_diff_epochs(const std::string& text, const TraceAnalysis& a);

}  // namespace objprof::analysis
