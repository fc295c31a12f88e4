#include "stale_tracker.h"

#include <tbb/parallel_sort.h>

#include <algorithm>

namespace objprof::internal {
namespace {

bool by_granule(const TrackedRecord& a, const TrackedRecord& b) { return a.granule < b.granule; }

void sort_table(std::vector<TrackedRecord>& t) {
  // Records merged later come later; stable order lets a duplicate address keep the newer one.
  if (t.size() > (1u << 20)) {  // below this, std::sort beats waking a thread pool
    tbb::parallel_sort(t.begin(), t.end(), [](const TrackedRecord& a, const TrackedRecord& b) {
      return a.granule < b.granule;
    });
  } else {
    std::stable_sort(t.begin(), t.end(), by_granule);
  }
}

// Two live records at one address mean the runtime reused memory without reporting the free.
// The table is sorted with later-merged records last: keep the newer one. Returns how many
// records were dropped.
std::uint64_t drop_duplicate_granules(std::vector<TrackedRecord>& t) {
  std::uint64_t dropped = 0;
  std::size_t out = 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (out > 0 && t[out - 1].granule == t[i].granule) {
      ++dropped;
      t[out - 1] = t[i];
      continue;
    }
    t[out++] = t[i];
  }
  t.resize(out);
  return dropped;
}

}  // namespace

void StaleTracker::set_spaces(std::vector<HeapSpace> spaces) {
  spaces_ = std::move(spaces);
  tables_.assign(spaces_.size(), {});
  staged_.assign(spaces_.size(), {});
}

int StaleTracker::space_of(Address a) const noexcept {
  for (std::size_t i = 0; i < spaces_.size(); ++i)
    if (spaces_[i].contains(a)) return static_cast<int>(i);
  return -1;
}

bool StaleTracker::add(const PendingTracked& p) {
  const int s = space_of(p.addr);
  if (s < 0) return false;
  const HeapSpace& sp = spaces_[static_cast<std::size_t>(s)];
  staged_[static_cast<std::size_t>(s)].push_back(
      TrackedRecord{static_cast<std::uint32_t>(sp.granule_of(p.addr)), p.site_type, p.size_granules & kSizeMask, p.birth_epoch});
  return true;
}

void StaleTracker::merge_pending() {
  for (std::size_t s = 0; s < tables_.size(); ++s) {
    if (staged_[s].empty()) continue;
    tables_[s].reserve(tables_[s].size() + staged_[s].size());
    tables_[s].insert(tables_[s].end(), staged_[s].begin(), staged_[s].end());
    std::vector<TrackedRecord>().swap(staged_[s]);  // staging is transient: give its memory back
    sort_table(tables_[s]);
    drop_duplicate_granules(tables_[s]);
  }
}

TrackedRecord* StaleTracker::find(std::size_t space, std::uint32_t granule) {
  auto& t = tables_[space];
  auto it = std::lower_bound(t.begin(), t.end(), granule, [](const TrackedRecord& r, std::uint32_t g) { return r.granule < g; });
  return (it != t.end() && it->granule == granule) ? &*it : nullptr;
}

void StaleTracker::apply_bits(std::size_t space, const BitmapSnapshot& bits, std::uint32_t epoch) {
  for (TrackedRecord& r : tables_[space])
    if (bits.test_granule(r.granule)) r.last_access = epoch;
}

StaleTracker::ApplyResult StaleTracker::apply(std::span<const MoveLog> moves, std::span<const RangeMoveLog> ranges,
                                              std::span<const Address> frees) {
  ApplyResult res;
  // Lookups use pre-GC addresses, so new addresses go to a side array and are applied after
  // every lookup is done (a sliding collector's `to` can be another object's `from`).
  std::vector<std::vector<Address>> new_addr(tables_.size());
  for (std::size_t s = 0; s < tables_.size(); ++s) new_addr[s].assign(tables_[s].size(), 0);
  auto locate = [&](Address a, std::size_t& s, std::size_t& idx) -> bool {
    const int si = space_of(a);
    if (si < 0) return false;
    s = static_cast<std::size_t>(si);
    if (!spaces_[s].is_aligned(a)) return false;
    TrackedRecord* r = find(s, static_cast<std::uint32_t>(spaces_[s].granule_of(a)));
    if (!r || r->site_type == kDead) return false;
    idx = static_cast<std::size_t>(r - tables_[s].data());
    return true;
  };
  for (Address a : frees) {
    std::size_t s, i;
    if (locate(a, s, i)) {
      tables_[s][i].site_type = kDead;
      ++res.freed;
    }
  }
  for (const MoveLog& m : moves) {
    std::size_t s, i;
    if (locate(m.from, s, i)) {
      new_addr[s][i] = m.to;
      ++res.moved;
    }
  }
  for (const RangeMoveLog& m : ranges) {
    if (m.bytes == 0) continue;
    // A run may start outside every space and still overlap one: intersect with each.
    for (std::size_t s = 0; s < spaces_.size(); ++s) {
      const HeapSpace& sp = spaces_[s];
      const Address lo_addr = std::max<Address>(m.from, sp.begin());
      const Address hi_addr = std::min<Address>(m.from + m.bytes, sp.end());
      if (lo_addr >= hi_addr) continue;
      const auto lo = static_cast<std::uint32_t>(sp.granule_of(lo_addr));
      auto& t = tables_[s];
      auto it = std::lower_bound(t.begin(), t.end(), lo, [](const TrackedRecord& r, std::uint32_t g) { return r.granule < g; });
      for (; it != t.end() && sp.address_of(it->granule) < hi_addr; ++it) {
        if (it->site_type == kDead) continue;
        new_addr[s][static_cast<std::size_t>(it - t.begin())] = sp.address_of(it->granule) - m.from + m.to;
        ++res.moved;
      }
    }
  }
  // Rebuild the tables: drop the dead, re-home the moved.
  std::vector<std::vector<TrackedRecord>> next(tables_.size());
  for (std::size_t s = 0; s < tables_.size(); ++s) next[s].reserve(tables_[s].size());
  for (std::size_t s = 0; s < tables_.size(); ++s) {
    for (std::size_t i = 0; i < tables_[s].size(); ++i) {
      TrackedRecord r = tables_[s][i];
      if (r.site_type == kDead) continue;
      if (new_addr[s][i] != 0) {
        const int to = space_of(new_addr[s][i]);
        if (to < 0) {
          ++res.left_spaces;
          continue;
        }
        r.granule = static_cast<std::uint32_t>(spaces_[static_cast<std::size_t>(to)].granule_of(new_addr[s][i]));
        next[static_cast<std::size_t>(to)].push_back(r);
      } else {
        next[s].push_back(r);
      }
    }
  }
  for (std::size_t s = 0; s < tables_.size(); ++s) {
    sort_table(next[s]);
    res.conflicts += drop_duplicate_granules(next[s]);
    tables_[s] = std::move(next[s]);
  }
  return res;
}

std::uint64_t StaleTracker::live() const noexcept {
  std::uint64_t n = 0;
  for (const auto& t : tables_) n += t.size();
  for (const auto& t : staged_) n += t.size();
  return n;
}

std::uint64_t StaleTracker::bytes() const noexcept {
  std::uint64_t n = 0;
  for (const auto& t : tables_) n += t.capacity() * sizeof(TrackedRecord);
  for (const auto& t : staged_) n += t.capacity() * sizeof(TrackedRecord);
  return n;
}

}  // namespace objprof::internal
