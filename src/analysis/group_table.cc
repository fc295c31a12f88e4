#include "objprof/analysis/group_table.h"

#include "parallel_objects.h"

#include <algorithm>

namespace objprof::analysis {

const char* group_by_name(GroupBy g) noexcept {
  switch (g) {
    case GroupBy::kSite: return "site";
    case GroupBy::kType: return "type";
    case GroupBy::kThread: return "thread";
  }
  return "?";
}

GroupTableBuilder::GroupTableBuilder(const TraceAnalysis& a, GroupBy by, const LifetimeBuckets& buckets)
    : a_(&a), by_(by), buckets_(&buckets) {
  const std::size_t n = by == GroupBy::kSite ? a.sites.size() : by == GroupBy::kType ? a.types.size() : a.threads.size();
  acc_.resize(n);
  hist_.assign(n * buckets.size(), 0);
}

void GroupTableBuilder::add(ObjectId o, const ObjectMetrics& m) {
  add(o, m, m.alive ? 0 : buckets_->index(buckets_->clock == Clock::kGcs ? m.lifetime_gcs : m.lifetime_bytes));
}

void GroupTableBuilder::add(ObjectId, const ObjectMetrics& m, std::size_t bucket) {
  const std::uint32_t g = by_ == GroupBy::kSite ? m.site : by_ == GroupBy::kType ? m.type : m.thread;
  const std::uint64_t size = m.size;
  Acc& x = acc_[g];
  ++x.allocated_objects;
  x.allocated_bytes += size;
  if (m.alive) {
    ++x.live_objects;
    x.live_bytes += size;
    return;
  }
  ++x.dead;
  x.lifetime_gcs += m.lifetime_gcs;
  x.lifetime_bytes += m.lifetime_bytes;
  ++hist_[g * buckets_->size() + bucket];
}

void GroupTableBuilder::merge(const GroupTableBuilder& o) {
  for (std::size_t g = 0; g < acc_.size(); ++g) {
    Acc& x = acc_[g];
    const Acc& y = o.acc_[g];
    x.allocated_objects += y.allocated_objects;
    x.allocated_bytes += y.allocated_bytes;
    x.live_objects += y.live_objects;
    x.live_bytes += y.live_bytes;
    x.dead += y.dead;
    x.lifetime_gcs += y.lifetime_gcs;
    x.lifetime_bytes += y.lifetime_bytes;
  }
  for (std::size_t i = 0; i < hist_.size(); ++i) hist_[i] += o.hist_[i];
}

GroupTable GroupTableBuilder::finish(std::size_t top) const {
  GroupTable t;
  t.by = by_;
  const std::size_t nb = buckets_->size();
  for (std::uint32_t g = 0; g < acc_.size(); ++g) {
    const Acc& x = acc_[g];
    if (x.allocated_objects == 0) continue;
    GroupRow r;
    r.index = g;
    switch (by_) {
      case GroupBy::kSite:
        r.id = a_->sites[g].id;
        r.name = site_label(a_->sites[g]);
        break;
      case GroupBy::kType:
        r.id = a_->types[g].id;
        r.name = a_->types[g].defined ? a_->types[g].name : "type#" + std::to_string(r.id);
        break;
      case GroupBy::kThread:
        r.id = a_->threads[g].id;
        r.name = a_->threads[g].defined ? a_->threads[g].name : "thread#" + std::to_string(r.id);
        break;
    }
    r.allocated_objects = x.allocated_objects;
    r.allocated_bytes = x.allocated_bytes;
    r.live_objects = x.live_objects;
    r.live_bytes = x.live_bytes;
    r.dead_objects = x.dead;
    if (x.dead) {
      r.mean_lifetime_gcs = static_cast<double>(x.lifetime_gcs) / static_cast<double>(x.dead);
      r.mean_lifetime_bytes = static_cast<double>(x.lifetime_bytes) / static_cast<double>(x.dead);
    }
    r.lifetime_buckets.assign(hist_.begin() + static_cast<std::ptrdiff_t>(g * nb), hist_.begin() + static_cast<std::ptrdiff_t>((g + 1) * nb));
    t.rows.push_back(std::move(r));
  }
  t.groups = t.rows.size();
  t.total.name = "total";
  t.total.lifetime_buckets.assign(nb, 0);
  std::uint64_t dead_gcs = 0, dead_bytes = 0;
  for (std::uint32_t g = 0; g < acc_.size(); ++g) {
    const Acc& x = acc_[g];
    t.total.allocated_objects += x.allocated_objects;
    t.total.allocated_bytes += x.allocated_bytes;
    t.total.live_objects += x.live_objects;
    t.total.live_bytes += x.live_bytes;
    t.total.dead_objects += x.dead;
    dead_gcs += x.lifetime_gcs;
    dead_bytes += x.lifetime_bytes;
    for (std::size_t b = 0; b < nb; ++b) t.total.lifetime_buckets[b] += hist_[g * nb + b];
  }
  if (t.total.dead_objects) {
    t.total.mean_lifetime_gcs = static_cast<double>(dead_gcs) / static_cast<double>(t.total.dead_objects);
    t.total.mean_lifetime_bytes = static_cast<double>(dead_bytes) / static_cast<double>(t.total.dead_objects);
  }
  std::stable_sort(t.rows.begin(), t.rows.end(), [](const GroupRow& x, const GroupRow& y) {
    return x.allocated_bytes != y.allocated_bytes ? x.allocated_bytes > y.allocated_bytes : x.index < y.index;
  });
  if (t.rows.size() > top) t.rows.resize(top);
  return t;
}

GroupTable group_table(const TraceAnalysis& a, GroupBy by, const LifetimeBuckets& buckets, const ObjectFilter& filter,
                       std::size_t top) {
  return internal::reduce_objects(a, filter, [&] { return GroupTableBuilder(a, by, buckets); }).finish(top);
}

}  // namespace objprof::analysis
