// reduce_objects (private): one parallel pass over every object, feeding each kept object and
// its metrics to a builder; each worker has its own builder, merged at the end. Every view is a
// builder with add(ObjectId, ObjectMetrics) and merge(const Builder&), so the report can also
// run all of them in one pass (report.cc) while each view stays usable on its own.
#pragma once

#include "parallel.h"

#include "objprof/analysis/object_metrics.h"
#include "objprof/analysis/trace_analysis.h"

#include <tbb/combinable.h>

#include <optional>

namespace objprof::analysis::internal {

// A running sum of differences kept modulo 2^64 (live objects or bytes), read back as a count:
// the two's-complement value, with a transiently negative sum shown as 0.
inline std::uint64_t clamp_running_sum(std::uint64_t sum) {
  const auto v = static_cast<std::int64_t>(sum);
  return v < 0 ? 0 : sum;
}

// Objects per task: big enough that a worker's builder is worth its merge.
inline constexpr std::size_t kObjectGrain = 1 << 15;

template <class Factory>
auto reduce_objects(const TraceAnalysis& a, const ObjectFilter& filter, Factory make) -> decltype(make()) {
  using Builder = decltype(make());
  tbb::combinable<std::optional<Builder>> parts;
  parallel_range(a.objects.size(), kObjectGrain, [&](const tbb::blocked_range<std::size_t>& r) {
                      std::optional<Builder>& b = parts.local();
                      if (!b) b.emplace(make());
                      for (std::size_t i = r.begin(); i != r.end(); ++i) {
                        const auto o = static_cast<ObjectId>(i);
                        const ObjectMetrics m = object_metrics(a, o);
                        if (filter.keep(m)) b->add(o, m);
                      }
                    });
  Builder out = make();
  parts.combine_each([&](const std::optional<Builder>& b) {
    if (b) out.merge(*b);
  });
  return out;
}

}  // namespace objprof::analysis::internal
