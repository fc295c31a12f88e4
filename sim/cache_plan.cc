// plan_cache(): a local search over per-site cache uses under the cost model of cache_plan.h.
#include "sim/cache_plan.h"

#include <fmt/core.h>

namespace objprof::sim {

const char* cache_use_name(CacheUse u) noexcept {
  switch (u) {
    case CacheUse::kCompare: return "compare";
    case CacheUse::kStore: return "store";
    case CacheUse::kNone: return "none";
  }
  return "?";
}

CacheCosts CacheCosts::host(bool pinned) noexcept {
#if defined(__aarch64__)
  return arm64(pinned);
#else
  return x86_64(pinned);
#endif
}

CacheProfile CacheProfile::empty_for(std::vector<CacheSiteKey> sites) {
  CacheProfile p;
  p.sites = std::move(sites);
  p.executed.assign(p.sites.size(), 0);
  p.hits.assign(p.sites.size(), 0);
  return p;
}

std::uint64_t CacheProfile::total_executed() const {
  std::uint64_t n = 0;
  for (std::uint64_t e : executed) n += e;
  return n;
}

std::uint64_t CacheProfile::total_hits() const {
  std::uint64_t n = 0;
  for (std::uint64_t h : hits) n += h;
  return n;
}

Status CacheProfile::merge(const CacheProfile& other) {
  if (sites.empty() && executed.empty()) {
    *this = other;
    return Status::Ok();
  }
  if (other.sites != sites)
    return make_error(ErrorCode::kInvalidArgument,
                      fmt::format("cache profiles of different code: {} and {} barrier sites", sites.size(), other.sites.size()));
  for (std::size_t i = 0; i < sites.size(); ++i) {
    executed[i] += other.executed[i];
    hits[i] += other.hits[i];
  }
  for (const auto& [edge, n] : other.fed) fed[edge] += n;
  unproduced_hits += other.unproduced_hits;
  return Status::Ok();
}

std::uint32_t CachePlan::count(CacheUse u) const {
  std::uint32_t n = 0;
  for (CacheUse x : use) n += x == u ? 1 : 0;
  return n;
}

namespace {

bool stores(CacheUse u) { return u != CacheUse::kNone; }

// The model's cost of a whole assignment, and the change one site's new use would make.
class CostModel {
 public:
  CostModel(const CacheProfile& p, const CacheCosts& c) : p_(p), c_(c), in_(p.sites.size()), out_(p.sites.size()) {
    for (const auto& [edge, n] : p.fed) {
      in_[edge.second].push_back({edge.first, n});
      out_[edge.first].push_back({edge.second, n});
    }
  }

  // Hits at `site` found by objects that storing sites put in the cache.
  double hits(const std::vector<CacheUse>& use, std::uint32_t site) const {
    double h = 0;
    for (const Edge& e : in_[site])
      if (stores(use[e.other])) h += static_cast<double>(e.n);
    return h;
  }

  double site_cost(const std::vector<CacheUse>& use, std::uint32_t site) const {
    const double e = static_cast<double>(p_.executed[site]);
    switch (use[site]) {
      case CacheUse::kNone: return e * c_.barrier;
      case CacheUse::kStore: return e * (c_.barrier + c_.store);
      case CacheUse::kCompare: {
        const double h = hits(use, site);
        return e * c_.compare + (e - h) * (c_.barrier + c_.store);
      }
    }
    return 0;
  }

  double total(const std::vector<CacheUse>& use) const {
    double t = 0;
    for (std::uint32_t s = 0; s < use.size(); ++s) t += site_cost(use, s);
    return t;
  }

  // cost(use with use[site] = to) - cost(use): the site itself and, when whether it stores
  // changes, every comparing consumer of its objects.
  double delta(std::vector<CacheUse>& use, std::uint32_t site, CacheUse to) const {
    const CacheUse from = use[site];
    if (from == to) return 0;
    auto local = [&] {
      double t = site_cost(use, site);
      if (stores(from) != stores(to))
        for (const Edge& e : out_[site])
          if (e.other != site && use[e.other] == CacheUse::kCompare) t += site_cost(use, e.other);
      return t;
    };
    const double before = local();
    use[site] = to;
    const double after = local();
    use[site] = from;
    return after - before;
  }

 private:
  struct Edge {
    std::uint32_t other;
    std::uint64_t n;
  };
  const CacheProfile& p_;
  const CacheCosts& c_;
  std::vector<std::vector<Edge>> in_, out_;
};

}  // namespace

CachePlan plan_cache(const CacheProfile& profile, const CacheCosts& costs) {
  const std::uint32_t n = static_cast<std::uint32_t>(profile.sites.size());
  CostModel model(profile, costs);
  CachePlan plan;
  plan.sites = profile.sites;
  // Descends from an assignment, one site at a time; each accepted change lowers the cost, so
  // this terminates (the pass limit only bounds pathological inputs).
  auto descend = [&](std::vector<CacheUse> use) {
    constexpr double kEpsilon = 1e-9;
    for (int pass = 0; pass < 64; ++pass) {
      bool changed = false;
      for (std::uint32_t s = 0; s < n; ++s) {
        CacheUse best = use[s];
        double best_delta = -kEpsilon;
        for (CacheUse to : {CacheUse::kCompare, CacheUse::kStore, CacheUse::kNone}) {
          const double d = model.delta(use, s, to);
          if (d < best_delta) {
            best_delta = d;
            best = to;
          }
        }
        if (best != use[s]) {
          use[s] = best;
          changed = true;
        }
      }
      if (!changed) break;
    }
    return use;
  };
  // Single-site moves cannot make a producer store and its consumer compare at once, so the
  // descent starts from several places and the cheapest end wins: the cache everywhere, no
  // cache, and "compare where the site's own profiled hits pay, store everywhere else".
  std::vector<CacheUse> greedy(n, CacheUse::kStore);
  for (std::uint32_t s = 0; s < n; ++s) {
    const double e = static_cast<double>(profile.executed[s]), h = static_cast<double>(profile.hits[s]);
    if (h * (costs.barrier + costs.store) > e * (costs.compare + costs.store)) greedy[s] = CacheUse::kCompare;
  }
  double best_cost = 0;
  bool first = true;
  for (const std::vector<CacheUse>& start :
       {greedy, std::vector<CacheUse>(n, CacheUse::kCompare), std::vector<CacheUse>(n, CacheUse::kNone)}) {
    std::vector<CacheUse> use = descend(start);
    const double cost = model.total(use);
    if (first || cost < best_cost) {
      first = false;
      best_cost = cost;
      plan.use = std::move(use);
    }
  }
  std::vector<CacheUse> none(n, CacheUse::kNone), all(n, CacheUse::kCompare);
  plan.cost_none = model.total(none);
  plan.cost_all_compare = model.total(all);
  plan.cost_plan = model.total(plan.use);
  return plan;
}

}  // namespace objprof::sim
