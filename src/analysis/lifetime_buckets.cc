#include "objprof/analysis/lifetime_buckets.h"

#include "format_util.h"

#include <fmt/core.h>

#include <algorithm>

namespace objprof::analysis {

std::size_t LifetimeBuckets::index(std::uint64_t lifetime) const noexcept {
  // bounds[0] == 0, so upper_bound never returns begin().
  return static_cast<std::size_t>(std::upper_bound(bounds.begin(), bounds.end(), lifetime) - bounds.begin()) - 1;
}

std::vector<std::string> LifetimeBuckets::labels() const {
  std::vector<std::string> out;
  auto num = [&](std::uint64_t v) { return clock == Clock::kGcs ? fmt::format("{}", v) : internal::human_bytes(v); };
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    if (i + 1 == bounds.size()) out.push_back(num(bounds[i]) + "+");
    else if (clock == Clock::kGcs && bounds[i + 1] == bounds[i] + 1) out.push_back(num(bounds[i]));
    else if (clock == Clock::kGcs) out.push_back(fmt::format("{}-{}", bounds[i], bounds[i + 1] - 1));
    else out.push_back(fmt::format("{}-{}", num(bounds[i]), num(bounds[i + 1])));
  }
  return out;
}

Result<LifetimeBuckets> parse_lifetime_buckets(const std::string& text, Clock clock) {
  LifetimeBuckets b;
  b.clock = clock;
  b.bounds.clear();
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    std::uint64_t v = 0;
    if (item.empty() || !internal::parse_size_text(item, v) ||
        (clock == Clock::kGcs && item.find_first_not_of("0123456789") != std::string::npos))
      return make_error(ErrorCode::kParse, fmt::format("lifetime bucket '{}' in '{}' is not a {}", item, text,
                                                       clock == Clock::kGcs ? "number of GCs" : "size (e.g. 64K)"));
    if (!b.bounds.empty() && v <= b.bounds.back())
      return make_error(ErrorCode::kParse, fmt::format("lifetime buckets '{}' are not increasing at '{}'", text, item));
    b.bounds.push_back(v);
    start = comma + 1;
  }
  if (b.bounds.front() != 0) b.bounds.insert(b.bounds.begin(), 0);
  return b;
}

}  // namespace objprof::analysis
