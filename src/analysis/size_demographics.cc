#include "objprof/analysis/size_demographics.h"

#include "parallel_objects.h"

#include <algorithm>
#include <bit>

namespace objprof::analysis {

SizeDemographicsBuilder::SizeDemographicsBuilder(const TraceAnalysis& a, std::size_t exact_sizes)
    : a_(&a), exact_limit_(exact_sizes) {}

void SizeDemographicsBuilder::add_to(Acc& acc, const Acc& x) {
  acc.objects += x.objects;
  acc.bytes += x.bytes;
  acc.live_objects += x.live_objects;
  acc.live_bytes += x.live_bytes;
}

SizeDemographicsBuilder::Acc& SizeDemographicsBuilder::exact_bin(std::uint64_t size) {
  std::uint8_t& slot = slot_[(size * 0x9E37'79B9'7F4A'7C15ull) >> 58];
  if (slot != 0 && exact_[slot - 1u].first == size) return exact_[slot - 1u].second;
  std::size_t i = 0;
  while (i < exact_.size() && exact_[i].first != size) ++i;
  if (i == exact_.size()) exact_.push_back({size, Acc{}});
  if (i < 255) slot = static_cast<std::uint8_t>(i + 1);
  return exact_[i].second;
}

void SizeDemographicsBuilder::add(ObjectId, const ObjectMetrics& m) {
  const std::uint64_t size = m.size;
  const Acc x{1, size, m.alive ? 1u : 0u, m.alive ? size : 0};
  add_to(pow2_[size <= 1 ? 0 : std::bit_width(size - 1)], x);
  if (too_many_) return;
  add_to(exact_bin(size), x);
  if (exact_.size() > exact_limit_) {
    too_many_ = true;
    exact_.clear();
    slot_.fill(0);
  }
}

void SizeDemographicsBuilder::merge(const SizeDemographicsBuilder& o) {
  for (int k = 0; k < 65; ++k) add_to(pow2_[k], o.pow2_[k]);
  if (o.too_many_) too_many_ = true;
  if (too_many_) {
    exact_.clear();
    slot_.fill(0);
    return;
  }
  for (const auto& [size, x] : o.exact_) add_to(exact_bin(size), x);
  if (exact_.size() > exact_limit_) {
    too_many_ = true;
    exact_.clear();
    slot_.fill(0);
  }
}

SizeDemographics SizeDemographicsBuilder::finish() const {
  SizeDemographics d;
  auto bin = [](std::uint64_t lo, std::uint64_t hi, const Acc& x) {
    return SizeBin{lo, hi, x.objects, x.bytes, x.live_objects, x.live_bytes};
  };
  if (!too_many_) {
    d.exact = true;
    for (const auto& [size, x] : exact_) d.bins.push_back(bin(size, size, x));
    std::sort(d.bins.begin(), d.bins.end(), [](const SizeBin& a, const SizeBin& b) { return a.min < b.min; });
    return d;
  }
  for (int k = 0; k < 65; ++k) {
    if (pow2_[k].objects == 0) continue;
    const std::uint64_t hi = k == 0 ? 1 : k == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << k);
    const std::uint64_t lo = k == 0 ? 0 : k == 1 ? 2 : (std::uint64_t{1} << (k - 1)) + 1;
    d.bins.push_back(bin(lo, hi, pow2_[k]));
  }
  return d;
}

SizeDemographics size_demographics(const TraceAnalysis& a, const ObjectFilter& filter, std::size_t exact_sizes) {
  return internal::reduce_objects(a, filter, [&] { return SizeDemographicsBuilder(a, exact_sizes); }).finish();
}

}  // namespace objprof::analysis
