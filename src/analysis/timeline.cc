#include "objprof/analysis/timeline.h"

#include <algorithm>

namespace objprof::analysis {

Timeline make_timeline(const TraceAnalysis& a, std::size_t max_samples) {
  Timeline t;
  const std::uint32_t end = a.end_epoch;
  const std::uint64_t gcs = end;  // samples after GCs 0 .. end-1, then the end
  const std::uint64_t keep = std::max<std::size_t>(max_samples, 2) - 1;
  const std::uint64_t stride = gcs <= keep ? 1 : (gcs + keep - 1) / keep;
  for (std::uint64_t e = (gcs > 0 ? (gcs - 1) % stride : 0); e < gcs; e += stride) {
    t.epochs.push_back(static_cast<std::uint32_t>(e));
    t.clocks.push_back(a.gc_end_clock(static_cast<std::uint32_t>(e)));
  }
  t.epochs.push_back(end);
  t.clocks.push_back(a.end_bytes);
  t.sample_from.assign(static_cast<std::size_t>(end) + 2, static_cast<std::uint32_t>(t.epochs.size()));
  std::size_t s = t.epochs.size();
  for (std::uint64_t e = std::uint64_t{end} + 1; e-- > 0;) {
    while (s > 0 && t.epochs[s - 1] >= e) --s;
    t.sample_from[e] = static_cast<std::uint32_t>(s);
  }
  return t;
}

}  // namespace objprof::analysis
