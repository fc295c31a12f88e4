#include "stale_tracker.h"

#include "side_table_memory.h"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cstddef>

namespace objprof::internal {
namespace {

// Sets the start bit of granule_of(x) for each x of `items`; true if one was set already (a
// start claimed twice). One load, or and store per item, the words pointer in a register.
template <class Items, class GranuleOf>
bool set_starts(std::uint64_t* words, const Items& items, GranuleOf&& granule_of) noexcept {
  std::uint64_t seen = 0;
  for (const auto& x : items) {
    const std::uint32_t g = granule_of(x);
    const std::uint64_t bit = std::uint64_t{1} << (g & 63);
    seen |= words[g >> 6] & bit;
    words[g >> 6] |= bit;
  }
  return seen != 0;
}

std::uint64_t slot_of(std::uint32_t granule, std::uint64_t mask) noexcept {
  return ((std::uint64_t{granule} + 1) * 0x9E3779B97F4A7C15ull >> 32) & mask;
}

// The slot of an open-addressing index (entries granule << 32 | value + 1, 0 = empty) that holds
// granule g, or the empty slot where it would go. Both indexes (of records, of moves) use it.
template <class Slot>
Slot& slot_for(Slot* slots, std::uint64_t mask, std::uint32_t g) noexcept {
  for (std::uint64_t h = slot_of(g, mask);; h = (h + 1) & mask)
    if (slots[h] == 0 || (slots[h] >> 32) == g) return slots[h];
}

std::uint64_t entry(std::uint32_t g, std::size_t i) noexcept { return (std::uint64_t{g} << 32) | (i + 1); }

// A GC's runs (moved or freed ranges: anything with `from` and `bytes`) made searchable: the
// empty ones dropped, the rest sorted by start.
template <class Run>
void sort_runs(std::vector<Run>& runs) {
  std::erase_if(runs, [](const Run& r) { return r.bytes == 0; });
  std::sort(runs.begin(), runs.end(), [](const Run& a, const Run& b) { return a.from < b.from; });
}

// The run of `runs` (sort_runs) that holds address a, or null. Few runs, many records: each
// record looks its address up this way.
template <class Run>
const Run* run_containing(const std::vector<Run>& runs, Address a) {
  auto it = std::upper_bound(runs.begin(), runs.end(), a, [](Address x, const Run& m) { return x < m.from; });
  if (it == runs.begin()) return nullptr;
  --it;
  return a - it->from < it->bytes ? &*it : nullptr;
}

}  // namespace

void StaleTracker::set_spaces(std::vector<HeapSpace> spaces) {
  spaces_ = std::move(spaces);
  tables_.assign(spaces_.size(), {});
  // Room for a small heap's records and a GC's scratch from the start: a new profiler's first
  // GCs would otherwise grow the table at each (the young adopted, then compacted in place), an
  // allocation and a copy of every record inside the pause. Uninitialized, so untouched pages
  // cost nothing until used.
  constexpr std::size_t kInitialRecords = 1024;
  for (RecordTable& t : tables_) t.reserve(kInitialRecords);
  moved_from_.reserve(kInitialRecords);
  moved_to_.reserve(kInitialRecords);
  left_granules_.reserve(kInitialRecords);
  young_.reserve(8);
  spare_.reserve(8);
  index_.assign(spaces_.size(), {});
  mask_.assign(spaces_.size(), 0);
  new_addr_.assign(spaces_.size(), {});
  next_.assign(spaces_.size(), {});
  for (RecordTable& t : next_) t.reserve(kInitialRecords);  // sweep_runs writes the new table here
  // sweep_runs' scratch for a copying GC's few runs, so that a new profiler's first GCs allocate
  // none of it inside the pause.
  constexpr std::size_t kInitialRuns = 64;
  runs_.reserve(kInitialRuns);
  runs_by_dest_.reserve(kInitialRuns);
  slices_.reserve(2 * kInitialRuns);
  sorted_parts_.reserve(8);
  young_rising_.reserve(8);
  young_.clear();
  starts_.clear();
  starts_.resize(spaces_.size());
  freed_.clear();
  freed_.resize(spaces_.size());
  move_cards_.clear();
  move_cards_.resize(spaces_.size());
  exact_starts_ = true;
  conflicts_pending_ = false;
  // Address space now, outside any GC (pages come on first touch): a GC's first use of the
  // bits then costs no system call.
  for (std::size_t s = 0; s < spaces_.size(); ++s) {
    exact_starts_ &= starts_[s].ensure(spaces_[s].granule_count());
    (void)freed_[s].ensure(spaces_[s].granule_count());
  }
  alloc_starts_ = spaces_.size() == 1 && exact_starts_ ? starts_[0].words() : nullptr;
  hook_cards_ = nullptr;
  if (alloc_starts_ != nullptr && spaces_[0].log2_alignment() == 3 &&
      move_cards_[0].ensure(static_cast<std::size_t>((spaces_[0].granule_count() >> move_card_shift(0)) + 1)))
    hook_cards_ = move_cards_[0].data();
  alloc_conflict_.store(false, std::memory_order_relaxed);
}

void StaleTracker::GranuleBits::set_span(std::uint64_t g0, std::uint64_t g1) noexcept {
  const std::uint64_t first = g0 >> 6, last = (g1 - 1) >> 6;
  const std::uint64_t head = head_mask(g0), tail = tail_mask(g1);
  if (first == last) {
    table_.data()[first] |= head & tail;
    return;
  }
  table_.data()[first] |= head;
  std::fill(table_.data() + first + 1, table_.data() + last, ~std::uint64_t{0});  // a copying GC's from-space: a fill
  table_.data()[last] |= tail;
}

void StaleTracker::GranuleBits::clear_exact(std::uint64_t g0, std::uint64_t g1) noexcept {
  const std::uint64_t first = g0 >> 6, last = (g1 - 1) >> 6;
  const std::uint64_t head = head_mask(g0), tail = tail_mask(g1);
  if (first == last) {
    table_.data()[first] &= ~(head & tail);
    return;
  }
  table_.data()[first] &= ~head;
  std::fill(table_.data() + first + 1, table_.data() + last, std::uint64_t{0});  // a long run of dead cells: a fill
  table_.data()[last] &= ~tail;
}

void StaleTracker::GranuleBits::clear_span(std::uint64_t g0, std::uint64_t g1) noexcept {
  std::fill(table_.data() + (g0 >> 6), table_.data() + ((g1 - 1) >> 6) + 1, std::uint64_t{0});
}

void StaleTracker::claim_from(std::size_t s, std::size_t first) noexcept {
  if (first >= tables_[s].size()) return;
  claim_all(s, std::span<const TrackedRecord>(tables_[s]).subspan(first));
}

void StaleTracker::claim_all(std::size_t s, std::span<const TrackedRecord> records) noexcept {
  if (records.empty() || !exact_starts_) return;
  if (!starts_[s].ensure(spaces_[s].granule_count())) {
    exact_starts_ = false;  // the filter lets everything through from now on
    return;
  }
  if (set_starts(starts_[s].words(), records, [](const TrackedRecord& r) { return r.granule; })) conflicts_pending_ = true;
}

void StaleTracker::claim_start(std::size_t s, std::uint64_t g) noexcept {
  if (!exact_starts_) return;
  GranuleBits& b = starts_[s];
  if (!b.ensure(spaces_[s].granule_count())) {
    exact_starts_ = false;  // the filter lets everything through from now on
    return;
  }
  if (b.test(g)) conflicts_pending_ = true;
  b.set(g);
}

int StaleTracker::space_of(Address a) const noexcept {
  for (std::size_t i = 0; i < spaces_.size(); ++i)
    if (spaces_[i].contains(a)) return static_cast<int>(i);
  return -1;
}

std::uint64_t StaleTracker::add_records(std::span<const TrackedRecord> records) {
  const std::size_t old = tables_.empty() ? 0 : tables_[0].size();
  const std::uint64_t added = add_claimed_records(records);
  if (added != 0) claim_from(0, old);
  return added;
}

std::uint64_t StaleTracker::add_claimed_records(std::span<const TrackedRecord> records) {
  if (records.empty() || spaces_.size() != 1) return 0;
  tables_[0].insert(tables_[0].end(), records.begin(), records.end());
  return records.size();
}

std::uint64_t StaleTracker::adopt_young(std::vector<TrackedRecord>& records, std::size_t unclaimed, bool rising) {
  std::uint64_t n = 0;
  if (records.empty() || spaces_.size() != 1) {
    records.clear();
  } else {
    n = records.size();
    // The allocating threads claimed the rest (claim_at_alloc): one pass less over the young,
    // most of whom die in this GC.
    claim_all(0, std::span<const TrackedRecord>(records).first(std::min(unclaimed, records.size())));
    young_.emplace_back().swap(records);
    young_rising_.resize(young_.size());
    young_rising_.back() = rising;
  }
  // A thread without room (its vector went to this or an earlier GC) gets an emptied one back.
  if (records.capacity() == 0 && !spare_.empty()) {
    records.swap(spare_.back());
    spare_.pop_back();
  }
  return n;
}

void StaleTracker::settle_young() {
  for (std::vector<TrackedRecord>& y : young_) {
    tables_[0].insert(tables_[0].end(), y.begin(), y.end());
    y.clear();
    spare_.push_back(std::move(y));
  }
  young_.clear();
}

std::uint64_t StaleTracker::add(std::span<const PendingTracked> objects) {
  std::uint64_t added = 0;
  // Appended after the older records, so a duplicate granule keeps the newer one at apply();
  // the tables keep their capacity from GC to GC, so steady-state adds do not allocate.
  for (const PendingTracked& p : objects) {
    const int si = space_of(p.addr);
    if (si < 0) continue;
    const auto s = static_cast<std::size_t>(si);
    const std::uint64_t g = spaces_[s].granule_of(p.addr);
    claim_start(s, g);
    tables_[s].push_back(TrackedRecord{static_cast<std::uint32_t>(g), p.site_type, p.size_granules & kSizeMask, p.birth_epoch});
    ++added;
  }
  return added;
}

std::uint64_t StaleTracker::resize(std::span<const PendingResize> resizes) {
  if (resizes.empty()) return 0;
  settle_young();  // the resized objects are looked up in the table
  // One object's resizes of one epoch all concern the same object (memory is reused only
  // after a GC's frees, and a bracket's resizes wait for the next gc_begin), so the last one
  // per address is its footprint now.
  std::vector<PendingResize>& last = resize_scratch_;
  last.assign(resizes.begin(), resizes.end());
  std::stable_sort(last.begin(), last.end(), [](const PendingResize& a, const PendingResize& b) { return a.addr < b.addr; });
  std::size_t n = 0;
  for (std::size_t i = 0; i < last.size(); ++i) {
    if (i + 1 < last.size() && last[i + 1].addr == last[i].addr) continue;
    last[n++] = last[i];
  }
  last.resize(n);
  // Records to update are found through an index; when no resized object is tracked yet (the
  // start bits say so exactly), none is needed. Every space gets an index, empty ones too: a
  // record started below makes its table non-empty, and the next lookup in it must find an
  // (empty) index rather than none.
  const bool find = std::any_of(last.begin(), last.end(), [&](const PendingResize& r) { return may_hold(r.addr); });
  if (find)
    for (std::size_t s = 0; s < tables_.size(); ++s) build_index(s);
  std::uint64_t started = 0;
  for (const PendingResize& r : last) {
    std::size_t s = 0;
    if (find) {
      if (const std::int64_t i = locate(r.addr, s); i >= 0) {
        TrackedRecord& rec = tables_[s][static_cast<std::size_t>(i)];
        rec.size_flags = (rec.size_flags & kReported) | (r.size_granules & kSizeMask);
        continue;
      }
    }
    const int si = space_of(r.addr);
    if (si < 0) continue;
    s = static_cast<std::size_t>(si);
    const std::uint64_t g = spaces_[s].granule_of(r.addr);
    claim_start(s, g);
    tables_[s].push_back(TrackedRecord{static_cast<std::uint32_t>(g), r.site_type, r.size_granules & kSizeMask, r.epoch});
    ++started;
  }
  return started;
}

void StaleTracker::apply_bits(std::size_t space, const BitmapSnapshot& bits, std::uint32_t epoch) {
  for (TrackedRecord& r : tables_[space])
    if (bits.test_granule(r.granule)) r.last_access = epoch;
}

void StaleTracker::clear_index(std::size_t s, std::size_t entries) {
  const std::uint64_t size = std::bit_ceil(std::max<std::uint64_t>(16, 2 * entries));
  index_[s].assign(size, 0);
  mask_[s] = size - 1;
}

std::uint64_t StaleTracker::build_index(std::size_t s) {
  RecordTable& t = tables_[s];
  clear_index(s, t.size());
  std::uint64_t conflicts = 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const std::uint32_t g = t[i].granule;
    std::uint64_t& e = slot_for(index_[s].data(), mask_[s], g);
    if (e != 0) {  // an older record at the same granule: the newer one wins
      t[(e & 0xFFFF'FFFFu) - 1].site_type = kDead;
      ++conflicts;
    }
    e = entry(g, i);
  }
  return conflicts;
}

std::int64_t StaleTracker::lookup(std::size_t s, std::uint32_t g) const noexcept {
  const std::uint64_t e = slot_for(index_[s].data(), mask_[s], g);
  if (e == 0) return -1;
  const auto i = static_cast<std::int64_t>(e & 0xFFFF'FFFFu) - 1;
  return tables_[s][static_cast<std::size_t>(i)].site_type == kDead ? -1 : i;
}

std::int64_t StaleTracker::locate(Address a, std::size_t& s) const noexcept {
  const int si = space_of(a);
  if (si < 0) return -1;
  s = static_cast<std::size_t>(si);
  if (tables_[s].empty() || !spaces_[s].is_aligned(a)) return -1;
  return lookup(s, static_cast<std::uint32_t>(spaces_[s].granule_of(a)));
}

StaleTracker::ApplyResult StaleTracker::apply(std::span<const BitmapSnapshot* const> bits, std::uint32_t epoch,
                                              std::vector<MoveLog>& moves, std::span<const RangeMoveLog> ranges,
                                              std::span<const Address> frees, std::span<const FreeRangeLog> free_ranges,
                                              std::uint64_t hook_carded, bool runs_logged) {
  ApplyResult res;
  // Inside the bracket no thread claims a start (claim_at_alloc): what they found is complete.
  if (alloc_conflict_.exchange(false, std::memory_order_relaxed)) conflicts_pending_ = true;
  // Every pass but sweep_runs changes granules in table order: the order is known again only
  // after sweep_runs.
  const std::size_t sorted = std::exchange(sorted_records_, 0);
  const bool any_moves = !moves.empty() || !ranges.empty();
  if (runs_logged && any_moves) {
    if (hook_carded == 0 && !conflicts_pending_ && exact_starts_ && spaces_.size() == 1 && free_ranges.size() == 1 &&
        sweep_runs(bits.empty() ? nullptr : bits[0], epoch, moves, ranges, frees, free_ranges[0], sorted, res)) {
      runs_backoff_ = 1;
      return res;
    }
    // Not a GC for the runs: the hooks card again for a while, and this GC's ranges are carded
    // now (a lone move's log is what the hooks write when they cannot card it).
    runs_wait_ = runs_backoff_;
    runs_backoff_ = std::min<std::uint32_t>(runs_backoff_ * 2, 1024);
    if (!ranges.empty() && !conflicts_pending_ && exact_starts_) ranges = card_logged_ranges(ranges, hook_carded);
  }
  auto bits_of = [&](std::size_t s) { return s < bits.size() ? bits[s] : nullptr; };
  bool any = !young_.empty();
  for (const auto& t : tables_) any |= !t.empty();
  if (!any) {  // nothing tracked: the GC's events concern no record
    if (hook_carded != 0) clear_cards(0);  // moves of no record: the cards start the next GC empty
    return res;
  }
  // Space s has records to visit: its table's, or (the only space) young ones.
  auto holds = [&](std::size_t s) { return !tables_[s].empty() || (s == 0 && !young_.empty()); };
  bool bits_mapped = true;
  for (std::size_t s = 0; s < tables_.size(); ++s)
    if (holds(s)) bits_mapped &= freed_[s].ensure(spaces_[s].granule_count());
  const bool fast = (moves.empty() || spaces_.size() == 1) && ranges.empty() && !conflicts_pending_ && exact_starts_ && bits_mapped;
  // The hooks carded moves (only the only space has cards for them) that only the fast path reads.
  if (hook_carded != 0 && !fast) {
    cards_to_logs(0, moves, hook_carded);
    hook_carded = 0;
  }
  if (fast) {
    // Single moves in the only space, or none, and every start claimed once: deaths are bits,
    // moves are found in an index of the moves (not of the records: most records of a GC die
    // and are never looked up), and one pass over each table (the young records last) drops
    // the dead with their start bits, applies the access bits to the rest and re-homes the
    // moved.
    for (std::size_t s = 0; s < tables_.size(); ++s) {
      if (!holds(s)) continue;
      if (moves.empty() && hook_carded == 0) {
        // Nothing moves: every start the GC freed is a dead record's, so its start bit goes now
        // (a word at a time for a range, no write per dead record) and the pass drops each
        // record whose start bit is clear. No scratch bits to set and clear.
        const bool any_freed = retire_starts(s, frees, free_ranges);
        res.freed += sweep_unmoved(s, bits_of(s), epoch, any_freed);
        continue;
      }
      // With moves the pass leaves the dead's start bits: every start bit under a freed bit is
      // a dead record's (or a moved one's, which goes anyway), and they go a word at a time
      // afterwards (no write per dead record).
      res.freed += sweep_table(s, bits_of(s), epoch, moves, hook_carded, frees, free_ranges, res);
    }
    return res;
  }
  res.indexed = true;
  settle_young();
  for (std::size_t s = 0; s < tables_.size(); ++s)
    if (const BitmapSnapshot* b = bits_of(s); b && !tables_[s].empty()) apply_bits(s, *b, epoch);
  for (std::size_t s = 0; s < tables_.size(); ++s)
    if (!tables_[s].empty()) res.conflicts += build_index(s);
  conflicts_pending_ = false;
  for (std::size_t s = 0; s < tables_.size(); ++s) {
    if (tables_[s].empty()) continue;
    res.freed += kill_freed(s, frees, free_ranges, moves, ranges);  // by search if the bits could not be mapped
  }
  // The start bits follow: every pre-GC start goes, the survivors' (post-GC) starts come back.
  if (exact_starts_)
    for (std::size_t s = 0; s < tables_.size(); ++s)
      if (starts_[s].mapped())
        for (const TrackedRecord& r : tables_[s]) starts_[s].clear(r.granule);
  if (spaces_.size() == 1 && ranges.empty()) {
    // One space, single moves (a copying collector): each record takes its new granule in place.
    // The index holds pre-GC granules, so a later move whose `from` is this record's new place
    // still finds the record that was there before the GC.
    for (const MoveLog& m : moves) {
      std::size_t s = 0;
      if (const std::int64_t i = locate(m.from, s); i >= 0) {
        tables_[0][static_cast<std::size_t>(i)].granule = static_cast<std::uint32_t>(spaces_[0].granule_of(m.to));
        ++res.moved;
      }
    }
    std::erase_if(tables_[0], [](const TrackedRecord& r) { return r.site_type == kDead; });
    claim_from(0, 0);
    return res;
  }
  // Lookups use pre-GC addresses, so new addresses go to a side array and are applied after
  // every lookup is done (a sliding collector's `to` can be another object's `from`, and a
  // record may change spaces).
  for (std::size_t s = 0; s < tables_.size(); ++s) new_addr_[s].assign(tables_[s].size(), 0);
  bool moved_any = false;
  for (const MoveLog& m : moves) {
    std::size_t s = 0;
    if (const std::int64_t i = locate(m.from, s); i >= 0) {
      new_addr_[s][static_cast<std::size_t>(i)] = m.to;
      ++res.moved;
      moved_any = true;
    }
  }
  if (!ranges.empty()) {
    std::vector<RangeMoveLog> runs(ranges.begin(), ranges.end());
    sort_runs(runs);
    for (std::size_t s = 0; s < tables_.size() && !runs.empty(); ++s) {
      for (std::size_t i = 0; i < tables_[s].size(); ++i) {
        const TrackedRecord& r = tables_[s][i];
        if (r.site_type == kDead) continue;
        const Address a = spaces_[s].address_of(r.granule);
        const RangeMoveLog* run = run_containing(runs, a);
        if (!run) continue;
        new_addr_[s][i] = a - run->from + run->to;
        ++res.moved;
        moved_any = true;
      }
    }
  }
  if (!moved_any) {
    // Non-moving GC: drop the dead in place.
    for (auto& t : tables_) std::erase_if(t, [](const TrackedRecord& r) { return r.site_type == kDead; });
  } else {
    // Rebuild the tables: drop the dead, re-home the moved (possibly into another space).
    for (std::size_t s = 0; s < tables_.size(); ++s) {
      next_[s].clear();
      next_[s].reserve(tables_[s].size());
    }
    for (std::size_t s = 0; s < tables_.size(); ++s) {
      for (std::size_t i = 0; i < tables_[s].size(); ++i) {
        TrackedRecord r = tables_[s][i];
        if (r.site_type == kDead) continue;
        const Address to_addr = new_addr_[s][i];
        if (to_addr == 0) {
          next_[s].push_back(r);
          continue;
        }
        const int to = space_of(to_addr);
        if (to < 0) {
          ++res.left_spaces;
          continue;
        }
        r.granule = static_cast<std::uint32_t>(spaces_[static_cast<std::size_t>(to)].granule_of(to_addr));
        next_[static_cast<std::size_t>(to)].push_back(r);
      }
    }
    for (std::size_t s = 0; s < tables_.size(); ++s) std::swap(tables_[s], next_[s]);
  }
  // Two survivors at one place (moved onto each other, or onto an object that stayed) claim
  // one start twice: the next apply() finds them through the index.
  for (std::size_t s = 0; s < tables_.size(); ++s) claim_from(s, 0);
  return res;
}

// The GC's deaths become bits, one per granule (mapped on first use, the words set cleared
// after): a freed address sets its granule's bit, a freed range the bits of the granules that
// start in it. Each record then tests the bit of its first granule: O(records + deaths +
// freed bytes / 512) and no search or index, however many frees and ranges a GC reports (a
// lazy sweep reports a range per step).
namespace {

// Granules [g0, g1) of `space` start inside the run: g0 = ceil(off / G), g1 = ceil((off +
// bytes) / G). False for a run of another space or one that holds no granule start.
bool span_of(const HeapSpace& space, const FreeRangeLog& run, std::uint64_t& g0, std::uint64_t& g1) {
  if (run.bytes == 0 || !space.contains(run.from)) return false;
  const unsigned lg = space.log2_alignment();
  const Address off = run.from - space.begin();
  const std::uint64_t end = std::min(off + run.bytes, space.size());
  g0 = (off + (std::uint64_t{1} << lg) - 1) >> lg;
  g1 = std::min((end + (std::uint64_t{1} << lg) - 1) >> lg, space.granule_count());
  return g0 < g1;
}

// The first record of [at, end) (sorted by granule) at granule g or above: steps of 1, 2, 4...
// from `at`, then a binary search of the last step. A run's slice starts near where the run
// before ended and is as long as its survivors, so each search costs about the log of what it
// passes over, not of the whole part.
const TrackedRecord* gallop(const TrackedRecord* at, const TrackedRecord* end, std::uint64_t g) {
  std::size_t step = 1;
  const TrackedRecord* lo = at;
  while (static_cast<std::size_t>(end - lo) > step && lo[step - 1].granule < g) {
    lo += step;
    step *= 2;
  }
  const TrackedRecord* hi = static_cast<std::size_t>(end - lo) > step ? lo + step : end;
  return std::lower_bound(lo, hi, g, [](const TrackedRecord& r, std::uint64_t x) { return r.granule < x; });
}

bool start_of(const HeapSpace& space, Address a, std::uint64_t& g) {
  if (!space.contains(a) || !space.is_aligned(a)) return false;
  g = space.granule_of(a);
  return true;
}

}  // namespace

// Calls start(g) for each freed address of space s (its granule g) and span(g0, g1) for each
// freed run of it (the granules that start inside); true if there was any.
template <class Start, class Span>
bool StaleTracker::for_each_freed(std::size_t s, std::span<const Address> frees, std::span<const FreeRangeLog> runs,
                                  Start&& start, Span&& span) const {
  // The space's bounds in locals: the callers' stores would otherwise reload them per address.
  const HeapSpace& space = spaces_[s];
  const Address begin = space.begin();
  const std::uint64_t size = space.size();
  const unsigned lg = space.log2_alignment();
  const std::uint64_t mask = (std::uint64_t{1} << lg) - 1;
  bool any = false;
  for (Address a : frees) {
    const Address off = a - begin;
    if (off >= size || (off & mask) != 0) continue;  // another space's, or no start
    start(off >> lg);
    any = true;
  }
  for (const FreeRangeLog& run : runs) {
    std::uint64_t g0 = 0, g1 = 0;
    if (!span_of(space, run, g0, g1)) continue;
    span(g0, g1);
    any = true;
  }
  return any;
}

void StaleTracker::retire_freed(std::size_t s, std::span<const Address> frees, std::span<const FreeRangeLog> runs) {
  GranuleBits& start_bits = starts_[s];
  GranuleBits& freed_bits = freed_[s];
  // The words in locals for the per-address loop (a member's pointer is reloaded after each store).
  std::uint64_t* const starts = start_bits.words();
  std::uint64_t* const freed = freed_bits.words();
  for_each_freed(
      s, frees, runs,
      [freed, starts](std::uint64_t g) {
        starts[g >> 6] &= ~freed[g >> 6];
        freed[g >> 6] = 0;
      },
      // Every start in a freed range goes: a dead record's, or a moved one's (whose source the
      // caller clears anyway, spared or not); a destination inside the range is claimed after.
      // Two fills, not a read-modify-write of both words per word: a copying GC's range is its
      // whole from-space. The boundary words' freed bits of other frees go too: those already
      // retired their starts (frees come first), and a range clears its own starts exactly.
      [&start_bits, &freed_bits](std::uint64_t g0, std::uint64_t g1) {
        start_bits.clear_exact(g0, g1);
        freed_bits.clear_span(g0, g1);
      });
}

bool StaleTracker::retire_starts(std::size_t s, std::span<const Address> frees, std::span<const FreeRangeLog> runs) {
  GranuleBits& starts = starts_[s];
  std::uint64_t* const words = starts.words();
  return for_each_freed(
      s, frees, runs, [words](std::uint64_t g) { words[g >> 6] &= ~(std::uint64_t{1} << (g & 63)); },
      [&starts](std::uint64_t g0, std::uint64_t g1) { starts.clear_exact(g0, g1); });
}

bool StaleTracker::mark_freed(std::size_t s, std::span<const Address> frees, std::span<const FreeRangeLog> runs) {
  GranuleBits& bits = freed_[s];
  std::uint64_t* const words = bits.words();
  return for_each_freed(
      s, frees, runs, [words](std::uint64_t g) { words[g >> 6] |= std::uint64_t{1} << (g & 63); },
      [&bits](std::uint64_t g0, std::uint64_t g1) { bits.set_span(g0, g1); });
}

void StaleTracker::unmark_freed(std::size_t s, std::span<const Address> frees, std::span<const FreeRangeLog> runs) {
  GranuleBits& bits = freed_[s];
  for_each_freed(s, frees, runs, [&](std::uint64_t g) { bits.clear(g); },
                 [&](std::uint64_t g0, std::uint64_t g1) { bits.clear_span(g0, g1); });
}

void StaleTracker::index_moves(std::size_t s, std::span<const MoveLog> moves, bool spare) {
  clear_index(s, moves.size());
  // Locals: the stores below would otherwise make the compiler reload every one per move.
  const HeapSpace space = spaces_[s];
  std::uint64_t* const slots = index_[s].data();
  const std::uint64_t mask = mask_[s];
  std::uint64_t* const freed = spare ? freed_[s].words() : nullptr;
  for (std::size_t i = 0; i < moves.size(); ++i) {
    std::uint64_t g = 0;
    if (!start_of(space, moves[i].from, g)) continue;  // no record starts there
    // The same object moved twice: the later move wins.
    slot_for(slots, mask, static_cast<std::uint32_t>(g)) = entry(static_cast<std::uint32_t>(g), i);
    if (freed) freed[g >> 6] &= ~(std::uint64_t{1} << (g & 63));  // spare_moved: a free range spares what moved
  }
}

std::int64_t StaleTracker::find_move(std::size_t s, std::uint32_t g) const noexcept {
  const std::uint64_t e = slot_for(index_[s].data(), mask_[s], g);
  return static_cast<std::int64_t>(e & 0xFFFF'FFFFu) - 1;  // -1 for an empty slot
}

namespace {

}  // namespace

namespace {

// A GC's moves found by the pre-GC granule of their source: through the card table, whose entry
// for the card of a moved record's start is its new granule + 1 (card_moves makes sure that no
// other record starts in that card), or through the open-addressing index of the moves.
// Returns the new granule, or -1 if the record did not move.
constexpr std::int64_t kLeftSpace = std::int64_t{1} << 32;  // a find's answer for a record moved out of its space

// Each entry is read once, by the one record that starts in its card, and cleared then.
template <unsigned kShift>
struct CardMoves {
  static constexpr unsigned kCardShift = kShift;
  std::uint32_t* cards;
  std::int64_t operator()(std::uint32_t g) const noexcept {
    std::uint32_t& e = cards[g >> kShift];
    const std::uint32_t to = e;
    e = 0;
    return static_cast<std::int64_t>(to) - 1;
  }
};

// The same for a GC whose hooks carded moves: they did so before gc_end set the GC's freed bits,
// so no move spared its source there (as card_moves and the index of the moves do); `moved`
// spares it in the pass, for a record under a freed bit.
template <unsigned kShift>
struct HookCardMoves : CardMoves<kShift> {
  bool moved(std::uint32_t g) const noexcept { return this->cards[g >> kShift] != 0; }
};

// Where keep_moved writes: the kept records, and per moved one its new granule and its old one
// (unless a freed bit retires the old start anyway; the old one alone, `left`, for one that
// moved out of the space). Sized by the caller for the worst case, so the pass only bumps
// pointers.
struct MovedOut {
  TrackedRecord* kept;
  std::uint32_t* from;
  std::uint32_t* to;
  std::uint32_t* left;
};

// The records of [in, end) that a GC with moves keeps, written in order at out.kept (which may
// be `in` itself: the pass compacts in place): a record dies when a freed bit covers its first
// granule (`freed`, or none; the bits of moved sources are spared), or with kLiveBits when the
// bit there is clear (`freed` then holds the live starts: a GC without moves); a survivor's last access
// becomes `epoch` when the snapshot's `marks` cover it; a moved one takes the granule of its
// move's `to` (`find`: the move's position or -1). Start bits are left alone: the caller
// retires the dead's, clears the sources' and claims the destinations' afterwards. Returns the
// number that died. Locals only: the loop keeps everything in registers (every record of a GC).
// No record here carries the dead tag: only build_index tags, when two records share a start,
// and a start claimed twice sends the GC to the index path, which erases what it tagged. With
// NoneFreed no record dies: the loop then tests nothing, since a dead young record, most of a
// GC's records, is otherwise all it costs (scimark's mark-sweep: 14 instructions each, 9
// without the tests).
// A survivor's part of the pass (keep_moved): its last access, its move, and
// the record copied to `kept`. The pointers are members of a local Keeper, which the loops keep
// in registers.
template <class Find>
struct Keeper {
  TrackedRecord* kept;
  std::uint32_t* from;
  std::uint32_t* to;
  std::uint32_t* left;
  const std::uint8_t* marks;
  std::size_t mark_bytes;
  std::uint32_t epoch;
  Find find;
  // Where kept and left started: what a loop kept or saw leave is the distance from them.
  const TrackedRecord* first_kept = kept;
  const std::uint32_t* first_left = left;

  // `source_retired`: a moved record under a freed bit (only the hooks' cards leave one:
  // HookCardMoves) needs no `from`: its start bit goes with the freed bits' (retire_freed).
  OBJPROF_ALWAYS_INLINE void keep(const TrackedRecord* in, std::uint32_t g, bool source_retired) {
    keep_found(in, g, find(g), source_retired);
  }
  // A record under a death that lives only if its card says it moved (HookCardMoves): the card
  // read once, and the record kept with its source's start bit left to the deaths'.
  OBJPROF_ALWAYS_INLINE void keep_if_moved(const TrackedRecord* in, std::uint32_t g) {
    if (const std::int64_t ng = find(g); ng >= 0) keep_found(in, g, ng, true);
  }
  // The same with the move already found (ng: the find's answer).
  OBJPROF_ALWAYS_INLINE void keep_found(const TrackedRecord* in, std::uint32_t g, std::int64_t ng, bool source_retired) {
    const bool marked = (g >> 3) < mark_bytes && ((marks[g >> 3] >> (g & 7)) & 1) != 0;
    if (ng == kLeftSpace) {  // moved out of the space
      *left++ = g;
      return;
    }
    // The record is copied whole and its two fields patched in place (kept <= in: a compaction
    // reads each record before anything overwrites it); built from its fields in registers it
    // took eight more instructions.
    *kept = *in;
    if (marked) kept->last_access = epoch;
    if (ng >= 0) {
      kept->granule = static_cast<std::uint32_t>(ng);
      if (!source_retired) *from++ = g;
      *to++ = static_cast<std::uint32_t>(ng);
    }
    ++kept;
  }
  MovedOut out() const noexcept { return MovedOut{kept, from, to, left}; }
  // Of `visited` records, those that died: neither kept nor moved out of the space.
  std::uint64_t dead_of(std::uint64_t visited) const noexcept {
    return visited - static_cast<std::uint64_t>(kept - first_kept) - static_cast<std::uint64_t>(left - first_left);
  }
};

// Which records a GC's deaths cover, by their first granule: the pass's one test of a record's
// death. FreedBits: one bit per granule, set where the GC freed a start (kLiveBits: the live
// start bits instead, clear where it did); FreedSpan: a GC whose only death is one range (a
// copying collector's evacuated area), a compare per record and no bits to set and clear;
// NoneFreed: nothing died.
template <bool kLiveBits>
struct FreedBits {
  const std::uint64_t* words;
  bool operator()(std::uint32_t g) const noexcept { return ((words[g >> 6] >> (g & 63)) & 1) != kLiveBits; }
};
struct FreedSpan {
  std::uint32_t first, count;  // granules [first, first + count), count > 0
  bool operator()(std::uint32_t g) const noexcept { return g - first < count; }
};
struct NoneFreed {
  bool operator()(std::uint32_t) const noexcept { return false; }
};

template <class Freed, class Find>
std::uint64_t keep_moved(const TrackedRecord* in, const TrackedRecord* end, MovedOut& out, Freed freed,
                         const std::uint8_t* marks, std::size_t mark_bytes, std::uint32_t epoch, Find find) {
  Keeper<Find> k{out.kept, out.from, out.to, out.left, marks, mark_bytes, epoch, find};
  const TrackedRecord* const first = in;
  for (; in != end; ++in) {
    const std::uint32_t g = in->granule;
    if constexpr (!std::is_same_v<Freed, NoneFreed>) {
      if (freed(g)) {
        if constexpr (requires { k.find.moved(g); }) k.keep_if_moved(in, g);
        continue;
      }
    }
    k.keep(in, g, false);
  }
  out = k.out();
  return k.dead_of(static_cast<std::uint64_t>(end - first));
}

// No record moves (a GC without moves).
struct NoMoves {
  std::int64_t operator()(std::uint32_t) const noexcept { return -1; }
};

// The one pass over a table and, for the only space, the GC's young records (`young`, or null):
// the table's survivors move down over its dead and the young's follow them, written through
// out.kept into room made first for the worst case (RecordTable's allocator does not zero it);
// the emptied young vectors go to `spare`. `freed` tells the dead (a Freed policy). Returns the
// number that died.
template <class Freed, class Find>
std::uint64_t one_pass(RecordTable& t, std::vector<std::vector<TrackedRecord>>* young,
                       std::vector<std::vector<TrackedRecord>>& spare, Freed freed, std::span<const std::uint8_t> marks,
                       std::uint32_t epoch, MovedOut& out, Find find) {
  std::size_t room = 0;
  if (young)
    for (const auto& y : *young) room += y.size();
  const std::size_t old = t.size();
  t.resize(old + room);
  out.kept = t.data();
  // One record at a time. Eight young records (or four of the table's) at a time with AVX2
  // gathers took fewer instructions but more time: listleak-marksweep's collections 1.228x
  // `off`'s against 1.137x this way, scimark-marksweep's 1.959x against 1.775x (medians of 8
  // and 6 alternating processes, 2026-12-08, docs/results.md).
  std::uint64_t dead = keep_moved(t.data(), t.data() + old, out, freed, marks.data(), marks.size(), epoch, find);
  if (young) {
    for (std::vector<TrackedRecord>& y : *young) {
      dead += keep_moved(y.data(), y.data() + y.size(), out, freed, marks.data(), marks.size(), epoch, find);
      y.clear();
      spare.push_back(std::move(y));
    }
    young->clear();
  }
  t.resize(static_cast<std::size_t>(out.kept - t.data()));
  return dead;
}

}  // namespace

// A GC without moves (mark-sweep): each record stays where it is or dies, so the pass is a
// compaction. The dead's start bits are gone already (retire_starts): a record whose start bit
// is clear died (every live record's is set: a start claimed twice takes the index path).
std::uint64_t StaleTracker::sweep_unmoved(std::size_t s, const BitmapSnapshot* bits, std::uint32_t epoch, bool any_freed) {
  const std::uint64_t* live = any_freed ? starts_[s].words() : nullptr;
  const std::span<const std::uint8_t> marks = bits != nullptr ? bits->bytes() : std::span<const std::uint8_t>();
  MovedOut out{nullptr, nullptr, nullptr, nullptr};  // nothing moves: only out.kept is written
  auto* young = s == 0 ? &young_ : nullptr;
  if (live != nullptr) return one_pass(tables_[s], young, spare_, FreedBits<true>{live}, marks, epoch, out, NoMoves{});
  return one_pass(tables_[s], young, spare_, NoneFreed{}, marks, epoch, out, NoMoves{});
}

namespace {

// card_moves for a space of 8-byte granules (the only kind with cards): the number of moves
// carded, or -1 (and nothing left in the cards).
std::int64_t card_moves_8(std::uint32_t* cards, const std::uint64_t* starts, std::uint64_t* freed, Address begin,
                          std::uint64_t size, std::span<const MoveLog> moves) {
  constexpr unsigned kShift = StaleTracker::kMoveCardLog2 - 3;  // granule -> card
  std::int64_t carded = 0;
  for (const MoveLog& m : moves) {
    const Address off = m.from - begin, to = m.to - begin;
    if (off >= size || (off & 7) != 0) continue;  // no record starts there
    const std::uint64_t g = off >> 3;
    std::uint32_t& e = cards[g >> kShift];
    // A second source in the card (or the same object moved twice), another record starting in
    // the card, or a destination outside the space: the index decides.
    if (e != 0 || !StaleTracker::sole_start_in_card(starts, g) || to >= size) {
      for (const MoveLog& u : moves.first(static_cast<std::size_t>(&m - moves.data()))) {
        const Address uo = u.from - begin;
        if (uo < size && (uo & 7) == 0) cards[(uo >> 3) >> kShift] = 0;
      }
      return -1;
    }
    e = static_cast<std::uint32_t>((to >> 3) + 1);
    if (freed) freed[g >> 6] &= ~(std::uint64_t{1} << (g & 63));  // spare_moved: a free range spares what moved
    ++carded;
  }
  return carded;
}

}  // namespace

std::int64_t StaleTracker::card_moves(std::size_t s, std::span<const MoveLog> moves, bool spare) {
  // Granules of 8 bytes only (every runtime here): other alignments take the index.
  if (spaces_[s].log2_alignment() != 3 ||
      !move_cards_[s].ensure(static_cast<std::size_t>((spaces_[s].granule_count() >> move_card_shift(s)) + 1)))
    return -1;
  return card_moves_8(move_cards_[s].data(), starts_[s].words(), spare ? freed_[s].words() : nullptr, spaces_[s].begin(),
                      spaces_[s].size(), moves);
}

namespace {

// Calls fn(g, word) for each start set in granules [g0, g1) (g0 < g1), in order, with the
// start-bit word that holds g, until fn returns false; returns that start, or g1 if none did.
template <class Fn>
std::uint64_t each_start_until(const std::uint64_t* starts, std::uint64_t g0, std::uint64_t g1, Fn&& fn) {
  const std::uint64_t last = (g1 - 1) >> 6;
  for (std::uint64_t w = g0 >> 6; w <= last; ++w) {
    const std::uint64_t word = starts[w];
    std::uint64_t bits = word;
    if (w == g0 >> 6) bits &= head_mask(g0);
    if (w == last) bits &= tail_mask(g1);
    for (; bits != 0; bits &= bits - 1) {
      const std::uint64_t g = (w << 6) | static_cast<unsigned>(std::countr_zero(bits));
      if (!fn(g, word)) return g;
    }
  }
  return g1;
}

}  // namespace

std::int64_t StaleTracker::card_range(std::uint32_t* cards, const std::uint64_t* starts, std::uint64_t off,
                                      std::uint64_t bytes, std::uint64_t delta) noexcept {
  constexpr unsigned kShift = kMoveCardLog2 - 3;  // granule -> card
  static_assert(kShift == 5, "a start-bit word's two 32-bit halves are two cards, 2w and 2w + 1");
  const std::uint64_t g0 = (off + 7) >> 3, g1 = (off + bytes + 7) >> 3;  // the granules starting inside
  if (g0 >= g1) return 0;
  const std::uint64_t dg = static_cast<std::uint64_t>(static_cast<std::int64_t>(delta) >> 3);  // delta in granules
  std::int64_t carded = 0;
  // Cards start g's move, or finds its card taken; a crowded card (two starts) counts as taken.
  auto card_one = [&](std::uint64_t g, std::uint64_t word) {
    std::uint32_t& e = cards[g >> kShift];
    if (e != 0 || !sole_start_in_word(word, g)) return false;
    e = static_cast<std::uint32_t>(g + dg) + 1;
    ++carded;
    return true;
  };
  // Cards the starts of word w that lie in the range (`bits`, non-zero; `word` is the whole
  // word); returns the first start that could not be carded, or g1.
  auto card_word = [&](std::uint64_t w, std::uint64_t word, std::uint64_t bits) {
    std::uint32_t* const pair = cards + 2 * w;
    const std::uint32_t in_low = static_cast<std::uint32_t>(bits), in_high = static_cast<std::uint32_t>(bits >> 32);
    // Neither half holds two starts (the usual case: with the default min_tracked_size of 256
    // bytes no two tracked objects start in one card): one test for both halves, subtracting 1
    // from each at once. A low half of 0 borrows from the high one, which is then tested as
    // high & (high - 2): still 0 for a single bit except bit 32 alone, which the exact test
    // of the halves then decides.
    const bool one_per_half =
        (word & (word - 0x0000000100000001u)) == 0 ||
        ((static_cast<std::uint32_t>(word) & (static_cast<std::uint32_t>(word) - 1)) |
         (static_cast<std::uint32_t>(word >> 32) & (static_cast<std::uint32_t>(word >> 32) - 1))) == 0;
    // The cards are not read: a taken one would be the same start moved twice in one GC (a
    // protocol error the hook checks report), and then the later move wins, as it does in the
    // index of the moves; the pass finds fewer moves than were carded and clears the cards.
    // Only the range's own cards are written: the word's other card may be a neighbouring
    // range's, which another collector thread may be writing.
    if (one_per_half) [[likely]] {
      // At most one start per card, cards 2w and 2w + 1: both written, with no loop over the bits.
      const std::uint32_t base = static_cast<std::uint32_t>((w << 6) + dg) + 1;
      if (in_low != 0) {
        pair[0] = base + static_cast<std::uint32_t>(std::countr_zero(in_low));
        ++carded;
      }
      if (in_high != 0) {
        pair[1] = base + 32 + static_cast<std::uint32_t>(std::countr_zero(in_high));
        ++carded;
      }
      return g1;
    }
    // A crowded word: its starts one at a time, each card_one's own, up to the one that fails.
    const std::uint64_t from = (w << 6) | static_cast<unsigned>(std::countr_zero(bits));
    const std::uint64_t end = std::min(g1, (w + 1) << 6);
    const std::uint64_t at = each_start_until(starts, from, end, card_one);
    return at != end ? at : g1;
  };
  const std::uint64_t first = g0 >> 6, last = (g1 - 1) >> 6;
  std::uint64_t stopped = g1;  // the first start that could not be carded, or g1
  // The first word and the last one carry the range's masks; the loop between tests one bound,
  // and whether it stopped only after a word with starts.
  std::uint64_t head = head_mask(g0);
  if (first == last) head &= tail_mask(g1);
  if (const std::uint64_t bits = starts[first] & head; bits != 0) stopped = card_word(first, starts[first], bits);
  if (stopped == g1)
    for (std::uint64_t w = first + 1; w < last; ++w)
      if (const std::uint64_t word = starts[w]; word != 0)
        if (stopped = card_word(w, word, word); stopped != g1) break;
  if (stopped == g1 && last > first)
    if (const std::uint64_t bits = starts[last] & tail_mask(g1); bits != 0) stopped = card_word(last, starts[last], bits);
  if (stopped == g1) return carded;
  // The starts before it were carded (no other thread writes the card of an object that starts
  // there): they go back to free.
  if (g0 < stopped)
    each_start_until(starts, g0, stopped, [cards](std::uint64_t g, std::uint64_t) {
      cards[g >> kShift] = 0;
      return true;
    });
  return -1;
}

void StaleTracker::uncard_moves(std::size_t s, std::span<const MoveLog> moves) {
  const HeapSpace& space = spaces_[s];
  const unsigned shift = move_card_shift(s);
  std::uint32_t* const cards = move_cards_[s].data();
  for (const MoveLog& m : moves) {
    std::uint64_t g = 0;
    if (start_of(space, m.from, g)) cards[g >> shift] = 0;
  }
}

void StaleTracker::cards_to_logs(std::size_t s, std::vector<MoveLog>& moves, std::uint64_t carded) {
  std::uint32_t* const cards = move_cards_[s].data();
  if (cards == nullptr || carded == 0) return;
  const HeapSpace& space = spaces_[s];
  const std::uint64_t* const starts = starts_[s].words();
  const unsigned shift = move_card_shift(s);  // 5: cards exist for 8-byte granules only
  std::uint64_t found = 0;
  // A carded move's source is the one start in its card, a record's: the records find them, at
  // the cost of the records rather than of the card table (1/64 of a space that may be reserved
  // many GiB large).
  auto take = [&](const TrackedRecord& r) {
    std::uint32_t& e = cards[r.granule >> shift];
    if (e == 0) return;
    if (!sole_start_in_card(starts, r.granule)) return;
    moves.push_back({space.address_of(r.granule), space.address_of(e - 1)});
    e = 0;
    ++found;
  };
  for (const TrackedRecord& r : tables_[s]) take(r);
  if (s == 0)
    for (const auto& y : young_)
      for (const TrackedRecord& r : y) take(r);
  if (found != carded) clear_cards(s);  // a carded move of no record: a protocol violation
}

void StaleTracker::clear_cards(std::size_t s) {
  std::uint32_t* const cards = move_cards_[s].data();
  if (cards == nullptr) return;
  const std::uint64_t count = (spaces_[s].granule_count() >> move_card_shift(s)) + 1;
  for (std::uint64_t c = 0; c < count; ++c)
    if (cards[c] != 0) cards[c] = 0;  // reads leave the table's untouched pages unmapped
}

unsigned StaleTracker::move_card_shift(std::size_t s) const noexcept {
  const unsigned lg = spaces_[s].log2_alignment();
  return lg >= kMoveCardLog2 ? 0 : kMoveCardLog2 - lg;
}

bool StaleTracker::take_runs_this_gc() noexcept {
  if (!hooks_may_card() || !exact_starts_) return false;  // the hooks' cards are the only space's
  if (runs_wait_ != 0) {
    --runs_wait_;
    return false;
  }
  return true;
}

std::span<const RangeMoveLog> StaleTracker::card_logged_ranges(std::span<const RangeMoveLog> ranges,
                                                               std::uint64_t& hook_carded) {
  uncarded_ranges_.clear();
  const HeapSpace space = spaces_[0];
  for (const RangeMoveLog& r : ranges) {
    // The hooks' own tests (on_move_range's short path): inside the space, at granule starts.
    const bool inside = r.bytes != 0 && space.contains(r.from) && space.contains(r.to) &&
                        r.bytes <= space.size() - (r.from - space.begin()) &&
                        r.bytes <= space.size() - (r.to - space.begin()) && space.is_aligned(r.from) &&
                        space.is_aligned(r.to);
    if (hook_cards_ != nullptr && inside) {
      if (const std::int64_t n = card_range(hook_cards_, starts_[0].words(), r.from - space.begin(), r.bytes, r.to - r.from);
          n >= 0) {
        hook_carded += static_cast<std::uint64_t>(n);
        continue;
      }
    }
    uncarded_ranges_.push_back(r);
  }
  return uncarded_ranges_;
}

bool StaleTracker::sweep_runs(const BitmapSnapshot* bits, std::uint32_t epoch, std::span<const MoveLog> moves,
                              std::span<const RangeMoveLog> ranges, std::span<const Address> frees,
                              const FreeRangeLog& freed, std::size_t sorted, ApplyResult& res) {
  const HeapSpace space = spaces_[0];
  std::uint64_t g0 = 0, g1 = 0;
  if (!span_of(space, freed, g0, g1)) return false;
  const unsigned lg = space.log2_alignment();
  const std::uint64_t granules = space.granule_count();
  // The runs, in granules: each source inside the evacuated range and each destination outside
  // it. The two logs each come in the order the collector reported (the sim's: by source).
  runs_.clear();
  bool by_source = true;
  auto add_run = [&](Address from, Address to, std::uint64_t bytes) {
    std::uint64_t f = 0, d = 0;
    if (bytes == 0 || !start_of(space, from, f) || !start_of(space, to, d)) return false;
    const std::uint64_t n = (bytes + (std::uint64_t{1} << lg) - 1) >> lg;  // the granules starting inside
    if (f < g0 || f >= g1 || n > g1 - f || d >= granules || n > granules - d || (d < g1 && d + n > g0)) return false;
    by_source &= runs_.empty() || runs_.back().from < f;
    runs_.push_back(Run{static_cast<std::uint32_t>(f), static_cast<std::uint32_t>(d), static_cast<std::uint32_t>(n)});
    return true;
  };
  // A lone move stands for the one record that starts at its source, if any.
  for (std::size_t i = 0, j = 0; i < moves.size() || j < ranges.size();) {
    const bool lone = j == ranges.size() || (i < moves.size() && moves[i].from < ranges[j].from);
    const bool ok = lone ? add_run(moves[i].from, moves[i].to, std::uint64_t{1} << lg)
                         : add_run(ranges[j].from, ranges[j].to, ranges[j].bytes);
    if (!ok) return false;
    (lone ? i : j) += 1;
  }
  if (runs_.empty() || runs_.size() > 0xFFFF'FFFFu) return false;  // runs_by_dest_ keeps 32-bit indexes
  if (!by_source) std::sort(runs_.begin(), runs_.end(), [](const Run& a, const Run& b) { return a.from < b.from; });
  // No two sources overlap (an object moved twice would be written twice).
  for (std::size_t k = 1; k < runs_.size(); ++k)
    if (std::uint64_t{runs_[k - 1].from} + runs_[k - 1].count > runs_[k].from) return false;

  // The records in parts sorted by granule, each inside the evacuated range: the table's first
  // `sorted` (the survivors sweep_runs wrote last GC, when they are all inside it), and
  // each young vector whose records all are (a bump allocator's, in allocation order). The
  // rest (the table's others, a young vector with records elsewhere: a large-object space's)
  // go one by one: inside the range into in_range_ (sorted if they come unsorted), outside it
  // into outside_, which keeps them in place unless freed.
  RecordTable& t = tables_[0];
  const std::uint64_t span = g1 - g0;
  auto inside = [&](std::uint32_t g) { return g - g0 < span; };
  std::uint64_t records = t.size();
  for (const auto& y : young_) records += y.size();
  sorted_parts_.clear();
  in_range_.clear();
  outside_.clear();
  compact_later_.clear();
  std::size_t known = std::min(sorted, t.size());
  if (known != 0 && (!inside(t[0].granule) || !inside(t[known - 1].granule))) known = 0;
  if (known != 0) sorted_parts_.push_back({t.data(), t.data() + known});
  auto one_by_one = [&](const TrackedRecord* b, const TrackedRecord* e) {
    for (; b != e; ++b) (inside(b->granule) ? in_range_ : outside_).push_back(*b);
  };
  one_by_one(t.data() + known, t.data() + t.size());
  for (std::size_t k = 0; k < young_.size(); ++k) {
    // A vector that rose all along (its thread said so) is a sorted part if its first and last
    // records are inside the range.
    std::vector<TrackedRecord>& y = young_[k];
    TrackedRecord* const b = y.data();
    TrackedRecord* const e = b + y.size();
    const bool bad = b != e && (!young_rising_[k] || !inside(b->granule) || !inside((e - 1)->granule));
    if (!bad) {
      if (b != e) sorted_parts_.push_back({b, e});
      continue;
    }
    // Do its records inside the range rise (the others outside it, a large-object space's)?
    // Read only: the vector is changed once nothing can fail any more (below).
    std::int64_t last = -1;
    bool rises = true;
    for (const TrackedRecord* r = b; r != e; ++r) {
      if (!inside(r->granule)) continue;
      rises &= static_cast<std::int64_t>(r->granule) > last;
      last = r->granule;
    }
    if (rises) {
      compact_later_.push_back(k);
      continue;
    }
    one_by_one(b, e);
  }
  // in_range_ sorted (stably: of two records at one granule the later stays later), and then
  // without two at one granule (a start claimed twice needs the index).
  auto not_above = [](const TrackedRecord& x, const TrackedRecord& z) { return x.granule >= z.granule; };
  if (std::adjacent_find(in_range_.begin(), in_range_.end(), not_above) != in_range_.end()) {
    std::stable_sort(in_range_.begin(), in_range_.end(),
                     [](const TrackedRecord& x, const TrackedRecord& z) { return x.granule < z.granule; });
    if (std::adjacent_find(in_range_.begin(), in_range_.end(), not_above) != in_range_.end()) return false;
  }
  if (!in_range_.empty()) sorted_parts_.push_back({in_range_.data(), in_range_.data() + in_range_.size()});
  // Nothing fails from here on. A young vector whose records inside the range rise among others
  // is this GC's to change (apply empties it): those records move to its front in their order,
  // a sorted part, and the others go to outside_.
  for (const std::size_t k : compact_later_) {
    std::vector<TrackedRecord>& y = young_[k];
    TrackedRecord* const b = y.data();
    TrackedRecord* front = b;
    for (const TrackedRecord* r = b; r != b + y.size(); ++r) {
      if (inside(r->granule)) *front++ = *r;
      else outside_.push_back(*r);
    }
    if (b != front) sorted_parts_.push_back({b, front});
  }

  // From here on the GC is applied. Each run's records are one slice of each sorted part, found
  // in source order (each search starts where the run before ended).
  const std::size_t parts = sorted_parts_.size();
  const std::size_t n_runs = runs_.size();
  slices_.clear();  // part p's slice of run k at p * n_runs + k
  for (std::size_t p = 0; p < parts; ++p) {
    const TrackedRecord* at = sorted_parts_[p].first;
    const TrackedRecord* const end = sorted_parts_[p].second;
    for (const Run& run : runs_) {
      const std::uint64_t run_end = std::uint64_t{run.from} + run.count;
      // No record of this part left before the run's end: an empty slice without a search (the
      // young part of a GC whose young all died lies above every run).
      if (at == end || at->granule >= run_end) {
        slices_.push_back({at, at});
        continue;
      }
      const TrackedRecord* lo = gallop(at, end, run.from);
      // A lone move's slice is its one record, if one starts there.
      at = run.count == 1 ? lo + (lo != end && lo->granule == run.from) : gallop(lo, end, run_end);
      slices_.push_back({lo, at});
    }
  }
  // The deaths' start bits: the frees' (a record outside the range dies with its start), then
  // every start in the range (the dead's, and the moved's sources).
  GranuleBits& starts = starts_[0];
  for (Address a : frees) {
    std::uint64_t g = 0;
    if (start_of(space, a, g)) starts.clear(g);
  }
  starts.clear_exact(g0, g1);
  std::uint64_t* const words = starts.words();
  const std::span<const std::uint8_t> marks = bits != nullptr ? bits->bytes() : std::span<const std::uint8_t>();
  const std::uint8_t* const mark = marks.data();
  const std::size_t mark_bytes = marks.size();
  // The snapshot marks granule g; `in_window` (std::true_type) when g is known to lie inside it.
  auto marked = [&](std::uint32_t g, auto in_window) {
    return (in_window || (g >> 3) < mark_bytes) && ((mark[g >> 3] >> (g & 7)) & 1) != 0;
  };
  // The records outside the range stay where they are, unless a free took their start (tested
  // before any destination's start is set).
  std::size_t stay = 0;
  for (const TrackedRecord& r : outside_) {
    if (!starts.test(r.granule)) continue;
    TrackedRecord& kept = outside_[stay++];
    kept = r;
    if (marked(r.granule, std::false_type{})) kept.last_access = epoch;
  }
  RecordTable& out = next_[0];
  out.resize(records);
  TrackedRecord* w = out.data();
  // The moved, in destination order: a new table in address order when the destinations rise.
  // Of two runs onto one place (a protocol slip: the next GC finds the start claimed twice and
  // keeps the record written later) the one from the higher source is written later, whatever
  // the order of the reports.
  // Sorted as (destination, index) keys: stable, with no buffer and no indirection per compare.
  runs_by_dest_.clear();
  for (std::size_t k = 0; k < n_runs; ++k) runs_by_dest_.push_back(std::uint64_t{runs_[k].to} << 32 | k);
  std::sort(runs_by_dest_.begin(), runs_by_dest_.end());
  bool seen = false;
  std::int64_t last = -1;
  bool ascending = true;
  // A survivor's share: its copy with the new granule, its last access, its start bit (~21
  // instructions). The marks' bounds are tested per run: a run inside the snapshot's window
  // (every run of a semispace's half, which is the window) needs no test per record. Four at a
  // time with AVX2 gathers took ~14 instructions a record but more time (listleak-semispace's
  // collections +140 to +234 us a run over `off` against +76 to +112 us this way).
  auto emit = [&](const TrackedRecord* lo, const TrackedRecord* hi, std::uint32_t delta, auto in_window) {
    for (const TrackedRecord* r = lo; r != hi; ++r, ++w) {
      const std::uint32_t g = r->granule;
      *w = *r;
      if (marked(g, in_window)) w->last_access = epoch;
      const std::uint32_t ng = g + delta;
      w->granule = ng;
      words[ng >> 6] |= std::uint64_t{1} << (ng & 63);
    }
  };
  for (const std::uint64_t key : runs_by_dest_) {
    const auto k = static_cast<std::size_t>(key & 0xFFFF'FFFFu);
    const Run& run = runs_[k];
    const std::uint32_t delta = run.to - run.from;  // modulo 2^32: granules fit in 32 bits
    const bool in_window = ((std::uint64_t{run.from} + run.count + 7) >> 3) <= mark_bytes;
    // Whether a destination already held a start (a protocol slip; the next GC sorts it out with
    // the index), once per run before it is written: the starts are exact here (no two records
    // at one granule), so a run's records never land on one another, only on an earlier run's or
    // on a record that stays. A start between a run's records counts too; the index then finds
    // no conflict, and the GC after it is applied as usual.
    if (!seen)  // a lone move's one bit inline (most of points-semispace's runs are lone)
      seen = run.count == 1 ? ((words[run.to >> 6] >> (run.to & 63)) & 1) != 0
                            : any_bit_in(words, run.to, std::uint64_t{run.to} + run.count);
    for (std::size_t p = 0; p < parts; ++p) {
      const auto [lo, hi] = slices_[p * n_runs + k];
      if (lo == hi) continue;
      ascending &= static_cast<std::int64_t>(lo->granule + delta) > last;
      last = (hi - 1)->granule + delta;
      if (in_window) emit(lo, hi, delta, std::true_type{});
      else emit(lo, hi, delta, std::false_type{});
    }
  }
  const auto moved = static_cast<std::size_t>(w - out.data());
  w = std::copy(outside_.data(), outside_.data() + stay, w);
  if (seen) conflicts_pending_ = true;  // a destination that held a start: the next GC sorts it out
  const auto kept = static_cast<std::size_t>(w - out.data());
  out.resize(kept);
  t.swap(out);
  out.clear();
  // The old table and the one-by-one scratch are kept for the next GC when small (no allocation
  // inside a short pause); a large heap's go back, so that between GCs a tracked object costs
  // its 16-byte record and not a second one.
  constexpr std::size_t kKeptScratch = std::size_t{1} << 16;  // records: 1 MiB
  if (out.capacity() > kKeptScratch) RecordTable().swap(out);
  if (in_range_.capacity() > kKeptScratch) std::vector<TrackedRecord>().swap(in_range_);
  if (outside_.capacity() > kKeptScratch) std::vector<TrackedRecord>().swap(outside_);
  for (std::vector<TrackedRecord>& y : young_) {
    y.clear();
    spare_.push_back(std::move(y));
  }
  young_.clear();
  res.moved += moved;
  res.freed += records - kept;
  res.by_runs = true;
  sorted_records_ = ascending ? moved : 0;
  return true;
}

// A GC with moves (all single moves, in the only space, every start claimed once): one pass
// drops the dead, applies the access bits and re-homes the moved, with no write per dead
// record; then the dead's start bits go a word at a time (retire_freed), the moved sources'
// one by one, and the destinations' are claimed (a destination that is a survivor's place
// claims a start twice: the next apply() finds them through the record index).
std::uint64_t StaleTracker::sweep_table(std::size_t s, const BitmapSnapshot* bits, std::uint32_t epoch,
                                        std::vector<MoveLog>& moves, std::uint64_t hook_carded,
                                        std::span<const Address> frees, std::span<const FreeRangeLog> free_ranges,
                                        ApplyResult& res) {
  const HeapSpace space = spaces_[s];
  // A GC whose one death is one range of this space (a copying collector's evacuated area)
  // sets no freed bits: the pass tests the range. Otherwise the deaths become bits.
  std::uint64_t g0 = 0, g1 = 0;
  bool span = frees.empty() && free_ranges.size() == 1 && span_of(space, free_ranges[0], g0, g1);
  bool any_freed = !span && mark_freed(s, frees, free_ranges);
  const std::uint64_t* freed = any_freed ? freed_[s].words() : nullptr;
  const std::span<const std::uint8_t> marks = bits != nullptr ? bits->bytes() : std::span<const std::uint8_t>();
  RecordTable& t = tables_[s];
  // Room for the worst case: every move moves a record (one_pass makes the table's).
  const std::size_t most = moves.size() + hook_carded;
  moved_from_.resize(most);
  moved_to_.resize(most);
  left_granules_.resize(most);
  MovedOut out{nullptr, moved_from_.data(), moved_to_.data(), left_granules_.data()};
  auto pass = [&](auto dead_test, auto find) {
    return one_pass(t, s == 0 ? &young_ : nullptr, spare_, dead_test, marks, epoch, out, find);
  };
  // The pass with the freed bits, or without (nothing freed here).
  auto pass_bits = [&](auto find) {
    return freed != nullptr ? pass(FreedBits<false>{freed}, find) : pass(NoneFreed{}, find);
  };
  std::uint64_t dead = 0;
  // The logged moves spare their sources' freed bits as they are carded; the hooks' cards are
  // looked up in the pass for the records under a freed bit instead, and so are both with one
  // free range: a record inside it lives if its card says it moved.
  if (const std::int64_t carded = card_moves(s, moves, any_freed && hook_carded == 0); carded >= 0) {
    // The pass clears the entry of every record it finds moved; a move of no record (a
    // protocol violation the checks would report) leaves one, cleared here.
    std::uint32_t* const cards = move_cards_[s].data();
    if (span)
      dead = pass(FreedSpan{static_cast<std::uint32_t>(g0), static_cast<std::uint32_t>(g1 - g0)}, HookCardMoves<8 - 3>{{cards}});
    else if (hook_carded == 0) dead = pass_bits(CardMoves<8 - 3>{cards});
    else dead = pass_bits(HookCardMoves<8 - 3>{{cards}});
    if (static_cast<std::uint64_t>(out.to - moved_to_.data() + (out.left - left_granules_.data())) !=
        static_cast<std::uint64_t>(carded) + hook_carded) {
      if (hook_carded == 0) uncard_moves(s, moves);
      else clear_cards(s);
    }
  } else {
    // The index of the moves spares their sources' freed bits: the one range gets them now.
    if (span) {
      any_freed = mark_freed(s, frees, free_ranges);
      freed = freed_[s].words();
      span = false;
    }
    // The hooks' cards join the logs (card_moves took its own back), and the index decides.
    cards_to_logs(s, moves, hook_carded);
    index_moves(s, moves, any_freed);
    dead = pass_bits([this, s, all = std::span<const MoveLog>(moves), &space](std::uint32_t g) -> std::int64_t {
      const std::int64_t i = find_move(s, g);
      if (i < 0) return -1;
      const Address to = all[static_cast<std::size_t>(i)].to;
      return space.contains(to) ? static_cast<std::int64_t>(space.granule_of(to)) : kLeftSpace;
    });
  }
  const std::span<const std::uint32_t> from(moved_from_.data(), out.from);
  const std::span<const std::uint32_t> to(moved_to_.data(), out.to);
  const std::span<const std::uint32_t> left(left_granules_.data(), out.left);
  res.moved += to.size();
  res.left_spaces += left.size();
  GranuleBits& starts = starts_[s];
  // Every start in the freed range goes (a dead record's or a moved one's, whose `from` the pass
  // left out); a destination inside it is claimed below.
  if (span) starts.clear_exact(g0, g1);
  else if (any_freed) retire_freed(s, frees, free_ranges);
  for (std::uint32_t g : from) starts.clear(g);
  for (std::uint32_t g : left) starts.clear(g);
  if (set_starts(starts.words(), to, [](std::uint32_t g) { return g; })) conflicts_pending_ = true;
  return dead;
}

// An object this GC moves is not freed by a range that holds its old place (a copying collector
// reports its whole evacuated area as one range): the freed bits at the sources of the GC's
// moves and range moves go before the records test them.
void StaleTracker::spare_moved(std::size_t s, std::span<const MoveLog> moves, std::span<const RangeMoveLog> ranges) {
  GranuleBits& bits = freed_[s];
  for (const MoveLog& m : moves) {
    std::uint64_t g = 0;
    if (start_of(spaces_[s], m.from, g)) bits.clear(g);
  }
  for (const RangeMoveLog& r : ranges) {
    std::uint64_t g0 = 0, g1 = 0;
    if (span_of(spaces_[s], FreeRangeLog{r.from, r.bytes}, g0, g1)) bits.clear_exact(g0, g1);
  }
}

// Marks the dead (for a GC that goes through the index).
std::uint64_t StaleTracker::kill_freed(std::size_t s, std::span<const Address> frees, std::span<const FreeRangeLog> runs,
                                       std::span<const MoveLog> moves, std::span<const RangeMoveLog> ranges) {
  if (!freed_[s].ensure(spaces_[s].granule_count())) return kill_freed_by_search(s, frees, runs, moves, ranges);
  if (!mark_freed(s, frees, runs)) return 0;
  spare_moved(s, moves, ranges);
  const GranuleBits& bits = freed_[s];
  std::uint64_t freed = 0;
  for (TrackedRecord& r : tables_[s]) {
    if (r.site_type == kDead || !bits.test(r.granule)) continue;
    r.site_type = kDead;
    ++freed;
  }
  unmark_freed(s, frees, runs);
  return freed;
}

// Without the bits (they could not be mapped): the index finds each freed start, and each record
// looks its address up among the runs sorted by start. Marks the dead; needs build_index.
std::uint64_t StaleTracker::kill_freed_by_search(std::size_t s, std::span<const Address> frees,
                                                 std::span<const FreeRangeLog> free_ranges, std::span<const MoveLog> moves,
                                                 std::span<const RangeMoveLog> ranges) {
  std::uint64_t freed = 0;
  for (Address a : frees) {
    std::size_t fs = 0;
    if (const std::int64_t i = locate(a, fs); i >= 0 && fs == s) {
      tables_[s][static_cast<std::size_t>(i)].site_type = kDead;
      ++freed;
    }
  }
  std::vector<FreeRangeLog>& runs = free_scratch_;
  runs.assign(free_ranges.begin(), free_ranges.end());
  sort_runs(runs);
  if (runs.empty()) return freed;
  // The moved are spared (spare_moved): their sources, sorted, and the range moves' runs.
  std::vector<Address>& moved = moved_scratch_;
  moved.clear();
  for (const MoveLog& m : moves) moved.push_back(m.from);
  std::sort(moved.begin(), moved.end());
  std::vector<FreeRangeLog> moved_runs;
  for (const RangeMoveLog& r : ranges) moved_runs.push_back({r.from, r.bytes});
  sort_runs(moved_runs);
  for (TrackedRecord& r : tables_[s]) {
    const Address a = spaces_[s].address_of(r.granule);
    if (r.site_type == kDead || !run_containing(runs, a)) continue;
    if (std::binary_search(moved.begin(), moved.end(), a) || run_containing(moved_runs, a)) continue;
    r.site_type = kDead;
    ++freed;
  }
  return freed;
}

StaleTracker::~StaleTracker() = default;

std::uint64_t StaleTracker::live() const noexcept {
  std::uint64_t n = 0;
  for (const auto& t : tables_) n += t.size();
  for (const auto& y : young_) n += y.size();
  return n;
}

std::uint64_t StaleTracker::bytes() const noexcept {
  std::uint64_t n = 0;
  for (const auto& t : tables_) n += t.capacity() * sizeof(TrackedRecord);
  for (const auto& y : young_) n += y.capacity() * sizeof(TrackedRecord);
  for (const auto& y : spare_) n += y.capacity() * sizeof(TrackedRecord);
  return n;
}

}  // namespace objprof::internal
