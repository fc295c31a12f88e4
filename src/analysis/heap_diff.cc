#include "objprof/analysis/heap_diff.h"

#include "parallel_objects.h"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>

namespace objprof::analysis {

namespace {
// Live right after the GC of epoch e (or at the end, e == end_epoch).
bool live_at(const ChainStore& c, ObjectId o, std::uint32_t e) {
  return c.birth_epoch(o) <= e && (c.alive(o) || c.death_epoch(o) > e);
}
void bump(DiffCounts& d, std::uint64_t size) {
  ++d.objects;
  d.bytes += size;
}
void accumulate(DiffCounts& d, const DiffCounts& x) {
  d.objects += x.objects;
  d.bytes += x.bytes;
}
}  // namespace

HeapDiffBuilder::HeapDiffBuilder(const TraceAnalysis& a, std::uint32_t from, std::uint32_t to)
    : a_(&a), from_(from), to_(to), rows_(a.sites.size()) {}

void HeapDiffBuilder::add(ObjectId o, const ObjectMetrics& m) {
  const bool at_from = live_at(a_->objects, o, from_), at_to = live_at(a_->objects, o, to_);
  if (!at_from && !at_to) return;
  HeapDiffRow& r = rows_[m.site];
  const std::uint64_t size = m.size;
  if (at_from && at_to) bump(r.kept, size);
  else if (at_from) bump(r.died, size);
  else bump(r.born, size);
}

void HeapDiffBuilder::merge(const HeapDiffBuilder& o) {
  for (std::size_t s = 0; s < rows_.size(); ++s) {
    accumulate(rows_[s].kept, o.rows_[s].kept);
    accumulate(rows_[s].died, o.rows_[s].died);
    accumulate(rows_[s].born, o.rows_[s].born);
  }
}

HeapDiff HeapDiffBuilder::finish(std::size_t top) const {
  HeapDiff d;
  d.from = from_;
  d.to = to_;
  for (std::uint32_t s = 0; s < rows_.size(); ++s) {
    HeapDiffRow r = rows_[s];
    r.site = s;
    accumulate(d.kept, r.kept);
    accumulate(d.died, r.died);
    accumulate(d.born, r.born);
    if (r.kept.objects + r.died.objects + r.born.objects) d.rows.push_back(r);
  }
  std::stable_sort(d.rows.begin(), d.rows.end(), [](const HeapDiffRow& x, const HeapDiffRow& y) {
    return x.net_bytes() != y.net_bytes() ? x.net_bytes() > y.net_bytes() : x.site < y.site;
  });
  if (d.rows.size() > top) d.rows.resize(top);
  return d;
}

Result<HeapDiff> heap_diff(const TraceAnalysis& a, std::uint32_t from, std::uint32_t to, const ObjectFilter& filter,
                           std::size_t top) {
  if (from > to || to > a.end_epoch)
    return make_error(ErrorCode::kInvalidArgument,
                      fmt::format("heap diff {}:{}: epochs must satisfy from <= to <= {} (the end)", from, to, a.end_epoch));
  return internal::reduce_objects(a, filter, [&] { return HeapDiffBuilder(a, from, to); }).finish(top);
}

Result<std::pair<std::uint32_t, std::uint32_t>> parse_diff_epochs(const std::string& text, const TraceAnalysis& a) {
  const std::size_t colon = text.find(':');
  auto one = [&](const std::string& s, std::uint32_t& out) {
    if (s == "end") {
      out = a.end_epoch;
      return true;
    }
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && p == s.data() + s.size() && !s.empty();
  };
  std::uint32_t from = 0, to = 0;
  if (colon == std::string::npos || !one(text.substr(0, colon), from) || !one(text.substr(colon + 1), to))
    return make_error(ErrorCode::kParse, fmt::format("--diff '{}' is not EPOCH:EPOCH (an epoch is a number or 'end')", text));
  if (from > to || to > a.end_epoch)
    return make_error(ErrorCode::kInvalidArgument,
                      fmt::format("--diff {}: epochs must satisfy from <= to <= {} (the end of this trace)", text, a.end_epoch));
  return std::pair{from, to};
}

}  // namespace objprof::analysis
