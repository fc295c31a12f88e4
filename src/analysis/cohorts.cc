#include "objprof/analysis/cohorts.h"

#include "parallel_objects.h"

#include <algorithm>
#include <bit>

namespace objprof::analysis {

std::uint64_t cohort_bytes_for(const TraceAnalysis& a, const CohortOptions& o) {
  const std::uint64_t total = std::max<std::uint64_t>(a.end_bytes, 1);
  std::uint64_t size = o.cohort_bytes;
  if (size == 0) size = std::max<std::uint64_t>(1024, std::bit_ceil(std::max<std::uint64_t>(total / 32, 1)));
  const std::uint64_t max = std::max<std::size_t>(o.max_cohorts, 1);
  while ((total + size - 1) / size > max) size *= 2;
  return size;
}

CohortBuilder::CohortBuilder(const TraceAnalysis& a, const Timeline& timeline, std::uint64_t cohort_bytes)
    : a_(&a), t_(&timeline), cohort_bytes_(std::max<std::uint64_t>(cohort_bytes, 1)) {
  // cohort_bytes_for() keeps the count small; a caller passing a tiny size directly gets at
  // most 2^16 cohorts, the last one taking the rest.
  cohorts_ = static_cast<std::size_t>(std::min<std::uint64_t>(std::max<std::uint64_t>(a.end_bytes, 1) / cohort_bytes_ + 1, 1 << 16));
  samples_ = timeline.size();
  alloc_objects_.assign(cohorts_, 0);
  alloc_bytes_.assign(cohorts_, 0);
  dead_.assign(cohorts_, 0);
  lifetime_sum_.assign(cohorts_, 0);
  live_objects_.assign(cohorts_ * (samples_ + 1), 0);
  live_bytes_.assign(cohorts_ * (samples_ + 1), 0);
  deaths_at_.assign(cohorts_ * (samples_ + 1), 0);
  lifetime_at_.assign(cohorts_ * (samples_ + 1), 0);
}

void CohortBuilder::add(ObjectId o, const ObjectMetrics& m) {
  const std::size_t c = std::min<std::size_t>(a_->objects.birth_bytes(o) / cohort_bytes_, cohorts_ - 1);
  // Differences modulo 2^64, as in LiveSeriesBuilder::add: no signed overflow for any size.
  const std::uint64_t size = m.size;
  ++alloc_objects_[c];
  alloc_bytes_[c] += size;
  const std::size_t row = c * (samples_ + 1);
  const std::uint32_t first = t_->first_sample(a_->objects.birth_epoch(o));
  const std::uint32_t stop = m.alive ? static_cast<std::uint32_t>(samples_) : t_->first_sample(a_->objects.death_epoch(o));
  if (first < stop) {
    live_objects_[row + first] += 1;
    live_objects_[row + stop] -= 1;
    live_bytes_[row + first] += size;
    live_bytes_[row + stop] -= size;
  }
  if (!m.alive) {
    ++dead_[c];
    lifetime_sum_[c] += m.lifetime_bytes;
    ++deaths_at_[row + stop];
    lifetime_at_[row + stop] += m.lifetime_bytes;
  }
}

void CohortBuilder::merge(const CohortBuilder& o) {
  for (std::size_t i = 0; i < cohorts_; ++i) {
    alloc_objects_[i] += o.alloc_objects_[i];
    alloc_bytes_[i] += o.alloc_bytes_[i];
    dead_[i] += o.dead_[i];
    lifetime_sum_[i] += o.lifetime_sum_[i];
  }
  for (std::size_t i = 0; i < live_objects_.size(); ++i) {
    live_objects_[i] += o.live_objects_[i];
    live_bytes_[i] += o.live_bytes_[i];
    deaths_at_[i] += o.deaths_at_[i];
    lifetime_at_[i] += o.lifetime_at_[i];
  }
}

CohortView CohortBuilder::finish() const {
  CohortView v;
  v.cohort_bytes = cohort_bytes_;
  v.timeline = *t_;
  for (std::size_t c = 0; c < cohorts_; ++c) {
    if (alloc_objects_[c] == 0) continue;
    Cohort k;
    k.index = static_cast<std::uint32_t>(c);
    k.start_bytes = c * cohort_bytes_;
    k.allocated_objects = alloc_objects_[c];
    k.allocated_bytes = alloc_bytes_[c];
    k.dead_objects = dead_[c];
    if (dead_[c]) k.mean_lifetime_bytes = static_cast<double>(lifetime_sum_[c]) / static_cast<double>(dead_[c]);
    const std::size_t row = c * (samples_ + 1);
    std::uint64_t objs = 0, bytes = 0;
    std::uint64_t deaths = 0, lifetimes = 0;
    for (std::size_t s = 0; s < samples_; ++s) {
      objs += live_objects_[row + s];
      bytes += live_bytes_[row + s];
      deaths += deaths_at_[row + s];
      lifetimes += lifetime_at_[row + s];
      k.live_objects.push_back(internal::clamp_running_sum(objs));
      k.live_bytes.push_back(internal::clamp_running_sum(bytes));
      k.mean_lifetime_bytes_so_far.push_back(deaths ? static_cast<double>(lifetimes) / static_cast<double>(deaths) : 0.0);
    }
    v.cohorts.push_back(std::move(k));
  }
  return v;
}

CohortView cohort_view(const TraceAnalysis& a, const CohortOptions& options, const ObjectFilter& filter, std::size_t max_samples) {
  const Timeline t = make_timeline(a, max_samples);
  const std::uint64_t size = cohort_bytes_for(a, options);
  return internal::reduce_objects(a, filter, [&] { return CohortBuilder(a, t, size); }).finish();
}

}  // namespace objprof::analysis
