#include "objprof/analysis/live_series.h"

#include "parallel_objects.h"

#include <algorithm>

namespace objprof::analysis {

LiveSeriesBuilder::LiveSeriesBuilder(const TraceAnalysis& a, const Timeline& timeline, GroupBy by)
    : a_(&a), t_(&timeline), by_(by), samples_(timeline.size()) {
  const std::size_t n = by == GroupBy::kSite ? a.sites.size() : by == GroupBy::kType ? a.types.size() : a.threads.size();
  objects_.assign(n, 0);
  bytes_.assign(n, 0);
  live_objects_.assign(n * (samples_ + 1), 0);
  live_bytes_.assign(n * (samples_ + 1), 0);
}

void LiveSeriesBuilder::add(ObjectId o, const ObjectMetrics& m) {
  const std::uint32_t g = by_ == GroupBy::kSite ? m.site : by_ == GroupBy::kType ? m.type : m.thread;
  // Differences are kept modulo 2^64 (unsigned): a size of 2^63 or more, or a sum past
  // INT64_MAX, wraps instead of overflowing, and finish() reads the running sums back.
  const std::uint64_t size = m.size;
  ++objects_[g];
  bytes_[g] += size;
  const std::size_t row = g * (samples_ + 1);
  const std::uint32_t first = t_->first_sample(a_->objects.birth_epoch(o));
  const std::uint32_t stop = m.alive ? static_cast<std::uint32_t>(samples_) : t_->first_sample(a_->objects.death_epoch(o));
  if (first >= stop) return;
  live_objects_[row + first] += 1;
  live_objects_[row + stop] -= 1;
  live_bytes_[row + first] += size;
  live_bytes_[row + stop] -= size;
}

void LiveSeriesBuilder::merge(const LiveSeriesBuilder& o) {
  for (std::size_t i = 0; i < objects_.size(); ++i) {
    objects_[i] += o.objects_[i];
    bytes_[i] += o.bytes_[i];
  }
  for (std::size_t i = 0; i < live_objects_.size(); ++i) {
    live_objects_[i] += o.live_objects_[i];
    live_bytes_[i] += o.live_bytes_[i];
  }
}

LiveSeriesView LiveSeriesBuilder::finish(std::size_t top) const {
  LiveSeriesView v;
  v.by = by_;
  v.timeline = *t_;
  for (std::uint32_t g = 0; g < objects_.size(); ++g) {
    if (objects_[g] == 0) continue;
    LiveSeries s;
    s.group = g;
    s.allocated_objects = objects_[g];
    s.allocated_bytes = bytes_[g];
    std::uint64_t objs = 0, bytes = 0;
    const std::size_t row = g * (samples_ + 1);
    for (std::size_t i = 0; i < samples_; ++i) {
      objs += live_objects_[row + i];
      bytes += live_bytes_[row + i];
      s.live_objects.push_back(internal::clamp_running_sum(objs));
      s.live_bytes.push_back(internal::clamp_running_sum(bytes));
    }
    v.series.push_back(std::move(s));
  }
  if (by_ != GroupBy::kThread)
    std::stable_sort(v.series.begin(), v.series.end(),
                     [](const LiveSeries& x, const LiveSeries& y) { return x.allocated_bytes > y.allocated_bytes; });
  if (v.series.size() > top) v.series.resize(top);
  return v;
}

LiveSeriesView live_series(const TraceAnalysis& a, GroupBy by, const ObjectFilter& filter, std::size_t max_samples,
                           std::size_t top) {
  const Timeline t = make_timeline(a, max_samples);
  return internal::reduce_objects(a, filter, [&] { return LiveSeriesBuilder(a, t, by); }).finish(top);
}

}  // namespace objprof::analysis
