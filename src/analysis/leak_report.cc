#include "objprof/analysis/leak_report.h"

#include "parallel_objects.h"

#include <algorithm>

namespace objprof::analysis {

LeakReportBuilder::LeakReportBuilder(const TraceAnalysis& a, const LeakOptions& options)
    : a_(&a), opt_(options), acc_(a.sites.size()) {}

namespace {
// Is (idle, size, id) a better "oldest stale object" than the current one?
bool more_stale(std::uint32_t idle, std::uint64_t size, ObjectId id, std::uint32_t cur_idle, std::uint64_t cur_size,
                ObjectId cur) {
  if (cur == kNoIndex) return true;
  if (idle != cur_idle) return idle > cur_idle;
  if (size != cur_size) return size > cur_size;
  return id < cur;
}
}  // namespace

void LeakReportBuilder::add(ObjectId o, const ObjectMetrics& m) {
  if (!is_stale(*a_, m, opt_.rule())) return;
  const std::uint64_t size = m.size;
  if (size < opt_.min_size) return;
  Acc& x = acc_[m.site];
  ++x.objects;
  x.bytes += size;
  x.score += size * m.idle_epochs;
  if (a_->objects.flags(o) & kReportedStale) ++x.online;
  if (more_stale(m.idle_epochs, size, o, x.max_idle, x.oldest_size, x.oldest)) {
    x.max_idle = m.idle_epochs;
    x.oldest_size = size;
    x.oldest = o;
  }
}

void LeakReportBuilder::merge(const LeakReportBuilder& other) {
  for (std::size_t s = 0; s < acc_.size(); ++s) {
    Acc& x = acc_[s];
    const Acc& y = other.acc_[s];
    if (y.objects == 0) continue;
    x.objects += y.objects;
    x.bytes += y.bytes;
    x.score += y.score;
    x.online += y.online;
    if (more_stale(y.max_idle, y.oldest_size, y.oldest, x.max_idle, x.oldest_size, x.oldest)) {
      x.max_idle = y.max_idle;
      x.oldest_size = y.oldest_size;
      x.oldest = y.oldest;
    }
  }
}

LeakReport LeakReportBuilder::finish(std::size_t top) const {
  LeakReport r;
  r.options = opt_;
  for (std::uint32_t s = 0; s < acc_.size(); ++s) {
    const Acc& x = acc_[s];
    if (x.objects == 0) continue;
    r.objects += x.objects;
    r.bytes += x.bytes;
    LeakSite l;
    l.site = s;
    l.objects = x.objects;
    l.bytes = x.bytes;
    l.score = x.score;
    l.max_idle_epochs = x.max_idle;
    l.reported_online = x.online;
    l.oldest = x.oldest;
    r.sites.push_back(std::move(l));
  }
  std::stable_sort(r.sites.begin(), r.sites.end(), [](const LeakSite& x, const LeakSite& y) {
    if (x.score != y.score) return x.score > y.score;
    if (x.bytes != y.bytes) return x.bytes > y.bytes;
    return x.site < y.site;
  });
  if (r.sites.size() > top) r.sites.resize(top);
  for (LeakSite& l : r.sites) {
    l.oldest_chain = a_->objects.chain(l.oldest);
    l.oldest_metrics = object_metrics(*a_, l.oldest);
    l.path = leak_site_path(*a_, l.site, a_->contexts[l.oldest_chain.context].type);
  }
  return r;
}

std::uint32_t leak_site_path(const TraceAnalysis& a, std::uint32_t site, std::uint32_t type) {
  // Best: found, of the oldest object's type; then found, any type; then the last failure.
  // The online tracker searches a (site, type) pair until it finds a path, so there are few.
  std::uint32_t best = kNoIndex;
  int best_rank = 0;
  for (std::uint32_t i = 0; i < a.paths.size(); ++i) {
    const trace::PathEvent& p = a.paths[i];
    if (p.site != a.sites[site].id) continue;
    const bool found = p.status == PathStatus::kFound;
    const int rank = found ? (p.type == a.types[type].id ? 3 : 2) : 1;
    if (rank > best_rank || (rank == 1 && best_rank == 1)) {
      best = i;
      best_rank = rank;
    }
  }
  return best;
}

LeakReport leak_report(const TraceAnalysis& a, const LeakOptions& options, const ObjectFilter& filter, std::size_t top) {
  return internal::reduce_objects(a, filter, [&] { return LeakReportBuilder(a, options); }).finish(top);
}

}  // namespace objprof::analysis
