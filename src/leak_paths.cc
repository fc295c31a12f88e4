#include "leak_paths.h"

#include <algorithm>

namespace objprof::internal {
namespace {

// Root names and labels are cut to this in the trace, so that a record with its root and a
// few steps fits the smallest chunk (256 bytes) and a long generated name cannot crowd out
// the path.
constexpr std::size_t kMaxPathText = 200;

std::string_view cut(std::string_view s) { return s.substr(0, std::min(s.size(), kMaxPathText)); }

}  // namespace

void LeakPaths::request(Address sample, std::uint32_t site, std::uint32_t type, std::uint32_t max_attempts) {
  const Request q{sample, site, type};
  if (paths_.count(q.key()) || max_attempts == 0) return;
  if (auto it = tries_.find(q.key()); it != tries_.end() && it->second >= max_attempts) return;
  for (const Request& r : requests_)
    if (r.key() == q.key()) return;  // a GC asks few groups: a scan is cheaper than a set
  requests_.push_back(q);
}

void LeakPaths::search(HeapWalker& walker, const PathSearchOptions& options,
                       const std::function<std::string_view(std::uint32_t)>& type_name) {
  done_.clear();
  if (requests_.empty()) return;
  std::vector<Address> targets;
  targets.reserve(requests_.size());
  for (const Request& r : requests_) targets.push_back(r.sample);
  std::vector<PathSearchResult> results = find_paths(walker, targets, options);
  if (results.empty()) {  // declined: ask again at a later GC
    requests_.clear();
    return;
  }
  ++searches_;
  for (std::size_t i = 0; i < requests_.size(); ++i) {
    const Request& q = requests_[i];
    PathSearchResult& res = results[i];
    for (PathStep& s : res.path.steps)
      if (s.type_id != kUnknownType) s.type_name = std::string(type_name(s.type_id));
    if (res.status == PathStatus::kFound) paths_.emplace(q.key(), res.path);
    else ++tries_[q.key()];
    done_.push_back({q, std::move(res)});
  }
  requests_.clear();
}

void LeakPaths::write(EventBuffer& out, std::uint64_t epoch) {
  for (const Done& d : done_) {
    const RootPath& p = d.result.path;
    const std::string_view root = cut(p.root_name);
    std::size_t bytes = 1 + 8 + 4 + 4 + 8 + 1 + 8 + 1 + EventBuffer::string_bytes(root) + 4 + 2;
    // A path longer than a chunk holds keeps the steps nearest its root (total_steps says
    // how many it had).
    std::size_t steps = 0;
    for (; steps < p.steps.size() && steps < 0xFFFF; ++steps) {
      const std::size_t step = 8 + 4 + EventBuffer::string_bytes(cut(p.steps[steps].via));
      if (bytes + step > out.capacity()) break;
      bytes += step;
    }
    std::uint8_t* w = out.begin_record(bytes);
    w = EventBuffer::put_u8(w, static_cast<std::uint8_t>(trace::Tag::kPath));
    w = EventBuffer::put_u64(w, epoch);
    w = EventBuffer::put_u32(w, d.request.site);
    w = EventBuffer::put_u32(w, d.request.type);
    w = EventBuffer::put_u64(w, d.request.sample);
    w = EventBuffer::put_u8(w, static_cast<std::uint8_t>(d.result.status));
    w = EventBuffer::put_u64(w, d.result.objects_visited);
    w = EventBuffer::put_u8(w, static_cast<std::uint8_t>(p.root_kind));
    w = EventBuffer::put_string(w, root);
    w = EventBuffer::put_u32(w, static_cast<std::uint32_t>(p.steps.size()));
    w = EventBuffer::put_u16(w, static_cast<std::uint16_t>(steps));
    for (std::size_t i = 0; i < steps; ++i) {
      w = EventBuffer::put_u64(w, p.steps[i].addr);
      w = EventBuffer::put_u32(w, p.steps[i].type_id);
      w = EventBuffer::put_string(w, cut(p.steps[i].via));
    }
  }
  done_.clear();
}

const RootPath* LeakPaths::path(std::uint32_t site, std::uint32_t type) const {
  const auto it = paths_.find(std::uint64_t{site} << 32 | type);
  return it == paths_.end() ? nullptr : &it->second;
}

}  // namespace objprof::internal
