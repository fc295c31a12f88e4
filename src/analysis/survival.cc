#include "objprof/analysis/survival.h"

#include "parallel_objects.h"

#include <algorithm>
#include <bit>

namespace objprof::analysis {

SurvivalBuilder::SurvivalBuilder(const TraceAnalysis& a, const SurvivalOptions& options) : a_(&a), opt_(options) {
  const std::uint32_t most = std::max<std::uint32_t>(a.end_epoch, 1);
  for (std::uint64_t n = 1; n <= most && thresholds_.size() < 12; n *= 2) thresholds_.push_back(static_cast<std::uint32_t>(n));
  const std::size_t sites = a.sites.size();
  objects_.assign(sites, 0);
  bytes_.assign(sites, 0);
  dead_.assign(sites * (thresholds_.size() + 1), 0);
  alive_.assign(sites * (thresholds_.size() + 1), 0);
}

void SurvivalBuilder::add(ObjectId, const ObjectMetrics& m) {
  ++objects_[m.site];
  bytes_[m.site] += m.size;
  // Thresholds are 1, 2, 4, ...: an object reaches the first bit_width(lifetime) of them.
  const std::size_t reached = std::min<std::size_t>(std::bit_width(m.lifetime_gcs), thresholds_.size());
  ++(m.alive ? alive_ : dead_)[m.site * (thresholds_.size() + 1) + reached];
}

void SurvivalBuilder::merge(const SurvivalBuilder& o) {
  for (std::size_t i = 0; i < objects_.size(); ++i) {
    objects_[i] += o.objects_[i];
    bytes_[i] += o.bytes_[i];
  }
  for (std::size_t i = 0; i < dead_.size(); ++i) {
    dead_[i] += o.dead_[i];
    alive_[i] += o.alive_[i];
  }
}

SurvivalTable SurvivalBuilder::finish(std::size_t top) const {
  SurvivalTable t;
  t.options = opt_;
  t.thresholds = thresholds_;
  const std::size_t nt = thresholds_.size();
  // The threshold the hint is judged at: the pretenure_gcs one, or the largest below it.
  std::size_t hint_k = 0;
  for (std::size_t k = 0; k < nt; ++k)
    if (thresholds_[k] <= opt_.pretenure_gcs) hint_k = k;
  for (std::uint32_t s = 0; s < objects_.size(); ++s) {
    if (objects_[s] == 0) continue;
    SurvivalRow r;
    r.site = s;
    r.objects = objects_[s];
    r.bytes = bytes_[s];
    // survived[k]: objects that reached threshold k; eligible[k]: those plus every dead object
    // that did not (a live one that has not reached k yet tells nothing about k).
    r.survived.assign(nt, 0);
    r.eligible.assign(nt, 0);
    const std::size_t row = s * (nt + 1);
    std::uint64_t dead_total = 0;
    for (std::size_t j = 0; j <= nt; ++j) dead_total += dead_[row + j];
    std::uint64_t reached = 0, alive_reached = 0;
    for (std::size_t k = nt; k-- > 0;) {
      reached += dead_[row + k + 1] + alive_[row + k + 1];
      alive_reached += alive_[row + k + 1];
      r.survived[k] = reached;
      r.eligible[k] = dead_total + alive_reached;
    }
    r.pretenure = nt > 0 && a_->end_epoch >= opt_.pretenure_gcs && r.eligible[hint_k] >= opt_.pretenure_min_objects &&
                  r.rate(hint_k) >= opt_.pretenure_rate;
    t.rows.push_back(std::move(r));
  }
  std::stable_sort(t.rows.begin(), t.rows.end(), [](const SurvivalRow& x, const SurvivalRow& y) { return x.bytes > y.bytes; });
  if (t.rows.size() > top) t.rows.resize(top);
  return t;
}

SurvivalTable survival_table(const TraceAnalysis& a, const SurvivalOptions& options, std::size_t top) {
  return internal::reduce_objects(a, ObjectFilter{}, [&] { return SurvivalBuilder(a, options); }).finish(top);
}

}  // namespace objprof::analysis
