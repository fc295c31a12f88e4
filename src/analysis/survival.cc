#include "objprof/analysis/survival.h"

#include "parallel_objects.h"

#include <algorithm>
#include <numeric>

namespace objprof::analysis {

SurvivalBuilder::SurvivalBuilder(const TraceAnalysis& a, const SurvivalOptions& options) : a_(&a), opt_(options) {
  const std::uint32_t most = std::max<std::uint32_t>(a.end_epoch, 1);
  for (std::uint64_t n = 1; n <= most && thresholds_.size() < 12; n *= 2) thresholds_.push_back(static_cast<std::uint32_t>(n));
  const std::size_t sites = a.sites.size();
  objects_.assign(sites, 0);
  bytes_.assign(sites, 0);
  survived_.assign(sites * thresholds_.size(), 0);
  eligible_.assign(sites * thresholds_.size(), 0);
}

void SurvivalBuilder::add(ObjectId o, const ObjectMetrics& m) {
  const std::uint32_t s = a_->contexts[a_->objects.context(o)].site;
  ++objects_[s];
  bytes_[s] += a_->objects.size_of(o);
  const std::size_t base = s * thresholds_.size();
  for (std::size_t k = 0; k < thresholds_.size(); ++k) {
    if (m.lifetime_gcs >= thresholds_[k]) {
      ++survived_[base + k];
      ++eligible_[base + k];
    } else if (!m.alive) {
      ++eligible_[base + k];
    } else {
      break;  // too young to tell, and so for every larger threshold
    }
  }
}

void SurvivalBuilder::merge(const SurvivalBuilder& o) {
  for (std::size_t i = 0; i < objects_.size(); ++i) {
    objects_[i] += o.objects_[i];
    bytes_[i] += o.bytes_[i];
  }
  for (std::size_t i = 0; i < survived_.size(); ++i) {
    survived_[i] += o.survived_[i];
    eligible_[i] += o.eligible_[i];
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
    r.survived.assign(survived_.begin() + static_cast<std::ptrdiff_t>(s * nt), survived_.begin() + static_cast<std::ptrdiff_t>((s + 1) * nt));
    r.eligible.assign(eligible_.begin() + static_cast<std::ptrdiff_t>(s * nt), eligible_.begin() + static_cast<std::ptrdiff_t>((s + 1) * nt));
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
