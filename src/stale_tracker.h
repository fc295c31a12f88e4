// StaleTracker (private): the online leak detector's table. One table per space, each a
// vector of 16-byte records (in address order after sweep_runs, else in no particular order),
// so the profiler keeps 16 bytes per tracked object beyond the bitmap (a GC that rewrites the
// table, sweep_runs or the index's rebuild, writes the new one beside the old: 16 bytes per
// survivor more while it runs), plus heap-side metadata like the bitmap's: one bit per granule
// where a tracked object starts (`starts`), kept up to date as records come, die and move.
//
// Updates from the hooks are logged and applied in bulk, in one pass per GC where possible. A
// new object's start bit is set by the thread that allocates it (claim_at_alloc), except inside
// a GC bracket, where gc_begin sets it later. At gc_begin the epoch's new objects are adopted
// where the allocating threads wrote them (their vectors change hands), and the epoch's access bits are kept
// as a snapshot. At gc_end the GC's deaths become bits too (one per freed start, a run of them
// per freed range), and one pass over the table drops the dead, applies the access bits to the
// living, then does the same for the adopted young records and appends only their survivors:
// most tracked objects die in their first GC and are never copied into the table (a dead young
// record costs its one bit test).
// A GC that moves nothing builds no index and needs no scratch bits: its deaths clear their
// start bits first (a word at a time for a freed range) and the pass drops every record whose
// start bit is clear. A copying GC (single moves in the only space) indexes its moves (granule ->
// move), not its records. A copying GC whose hooks logged its runs (ranges and lone moves:
// take_runs_this_gc) and whose one death is the evacuated range goes by the runs alone
// (sweep_runs): the records are kept in address order, so each run's records are one slice of
// them, and the dead are never visited. Range moves it cannot card, moves across spaces and
// memory reused without a free (a start claimed twice) take an open-addressing index of the
// records (granule -> record). The
// start bits are also the collector hooks' exact filter: an event at an address where no
// tracked object starts is dropped with one bit test.
#pragma once

#include "objprof/access_bitmap.h"
#include "objprof/heap_space.h"
#include "objprof/thread_state.h"
#include "objprof/word_masks.h"
#include "side_table_memory.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

namespace objprof::internal {

struct MoveLog { Address from, to; };
struct RangeMoveLog { Address from, to; std::uint64_t bytes; };
struct FreeRangeLog { Address from; std::uint64_t bytes; };

// Appends a collector thread's logs (anything with moves, ranges, frees and free_ranges vectors
// of these types) to one set of vectors and empties them; called for each thread's logs in
// turn. The first log of each kind changes hands instead of being copied (one collector
// thread: no copy at all), and the local gets the emptied merged vector back, so the two
// vectors trade places from GC to GC and both keep their capacity.
template <class Log>
void gather_log(std::vector<Log>& all, std::vector<Log>& local) {
  if (local.empty()) return;
  if (all.empty()) {
    all.swap(local);
  } else {
    all.insert(all.end(), local.begin(), local.end());
  }
  local.clear();
}
template <class Local>
void gather_collector_log(Local& local, std::vector<MoveLog>& moves, std::vector<RangeMoveLog>& ranges, std::vector<Address>& frees,
                          std::vector<FreeRangeLog>& free_ranges) {
  gather_log(moves, local.moves);
  gather_log(ranges, local.ranges);
  gather_log(frees, local.frees);
  gather_log(free_ranges, local.free_ranges);
}

// An allocator that leaves value-initialized trivial elements uninitialized, so that a table can
// grow by resize() to the worst case of a pass that then writes it (StaleTracker::sweep_table)
// without zeroing it first: a GC's young records are most of its records and most die.
template <class T>
struct UninitializedAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = UninitializedAllocator<U>;
  };
  UninitializedAllocator() = default;
  template <class U>
  UninitializedAllocator(const UninitializedAllocator<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
using RecordTable = std::vector<TrackedRecord, UninitializedAllocator<TrackedRecord>>;

class StaleTracker {
 public:
  static constexpr std::uint32_t kReported = 0x8000'0000u;
  static constexpr std::uint32_t kSizeMask = 0x7FFF'FFFFu;
  static constexpr std::uint32_t kDead = 0xFFFF'FFFFu;
  // A move card covers 2^8 bytes of a space (move_cards_).
  static constexpr unsigned kMoveCardLog2 = 8;

  StaleTracker() = default;
  StaleTracker(const StaleTracker&) = delete;
  StaleTracker& operator=(const StaleTracker&) = delete;
  ~StaleTracker();

  void set_spaces(std::vector<HeapSpace> spaces);
  // Largest granule index a record can hold; spaces above it are rejected at add_space.
  static constexpr std::uint64_t kMaxGranules = 0xFFFF'FFFFull;

  // Adds the epoch's new objects (at gc_begin; with several spaces, or allocated before the
  // spaces froze) and returns how many are tracked: an object in no space is not. A new object
  // whose start is already a live record's is a conflict (the runtime reused memory without
  // reporting a free): the next apply() resolves it.
  std::uint64_t add(std::span<const PendingTracked> objects);
  // The same for records of the only space, as on_alloc writes them (granule, pair, size,
  // birth): one copy, then one bit per object.
  std::uint64_t add_records(std::span<const TrackedRecord> records);
  // The same without the copy (at gc_begin, mutators stopped): takes the vector's records as
  // this GC's young ones, so a thread's vector changes hands instead of being copied, and gives
  // the thread back an emptied vector of an earlier GC (with its capacity: steady-state on_alloc
  // grows none). The next apply() drops the young that died and appends the rest to the table.
  // Only the first `unclaimed` records get their start bits here: the others' were set when
  // they were allocated (claim_at_alloc). Returns how many are tracked.
  // `rising`: the allocating thread saw the records rise in address order
  // (ThreadState::next_rising_granule), so that sweep_runs need not check them.
  std::uint64_t adopt_young(std::vector<TrackedRecord>& records, std::size_t unclaimed, bool rising = false);
  // add_records for records whose start bits are set already (claim_at_alloc).
  std::uint64_t add_claimed_records(std::span<const TrackedRecord> records);

  // The start bits of the only space, for the allocating threads to claim a new record's start
  // themselves outside GC brackets (claim_at_alloc), or null: several spaces, or bits that
  // could not be mapped (then gc_begin claims every record). Fixed from set_spaces on.
  std::uint64_t* alloc_starts() const noexcept { return alloc_starts_; }
  // A record of granule g starts here from now on: the allocating thread's claim, outside a GC
  // bracket (collector code reads and writes the bits only while no mutator allocates outside
  // one). Atomic: threads allocating side by side share words. A start claimed twice (memory
  // reused without a free) is a conflict the next apply() resolves.
  static void claim_at_alloc(std::uint64_t* starts, std::uint32_t g, std::atomic<bool>& conflict) noexcept {
    const std::uint64_t bit = std::uint64_t{1} << (g & 63);
    if (std::atomic_ref<std::uint64_t>(starts[g >> 6]).fetch_or(bit, std::memory_order_relaxed) & bit)
      conflict.store(true, std::memory_order_relaxed);
  }
  // Where the allocating threads report a start claimed twice (claim_at_alloc).
  std::atomic<bool>& alloc_conflict() noexcept { return alloc_conflict_; }
  // Applies the epoch's footprint changes (at gc_begin, after add): a tracked object takes its
  // new size; an untracked one is tracked from now on, with the resize's site, type and epoch
  // as its birth. Returns how many objects started being tracked.
  std::uint64_t resize(std::span<const PendingResize> resizes);
  // `indexed`: the GC went through the index of the records (range moves, moves across spaces,
  // a start claimed twice, bits that could not be mapped) instead of the one pass.
  struct ApplyResult {
    std::uint64_t freed = 0, moved = 0, left_spaces = 0, conflicts = 0;
    bool indexed = false, by_runs = false;  // by_runs: sweep_runs
  };
  // Applies one GC: the epoch's access bits (`bits[s]`, the snapshot harvested at gc_begin for
  // space s, or null) as last_access = epoch to every record marked at its pre-GC granule, and
  // the GC's deaths and moves, looked up at their pre-GC addresses. Two live records at one
  // granule mean the runtime reused memory without reporting a free (or moved two objects to
  // one place): the one added or moved there later is kept, and it is counted as a conflict
  // (at the GC that finds it).
  // `hook_carded` moves were carded by the collector hooks themselves (hook_cards) instead of
  // logged in `moves`; a GC that cannot use the cards turns them into logs appended to `moves`.
  // `runs_logged`: the hooks logged every move of this GC, lone and range, instead of carding
  // it (take_runs_this_gc said so at gc_begin): a copying GC's one pass then goes by the runs
  // (sweep_runs); any other GC cards the logged ranges first, as the hooks would have.
  ApplyResult apply(std::span<const BitmapSnapshot* const> bits, std::uint32_t epoch, std::vector<MoveLog>& moves,
                    std::span<const RangeMoveLog> ranges, std::span<const Address> frees,
                    std::span<const FreeRangeLog> free_ranges, std::uint64_t hook_carded = 0,
                    bool runs_logged = false);

  // Asked once at gc_begin, after hooks_may_card: whether this GC's hooks should log their moves
  // (a lone move as one log entry, a range as one) instead of carding each tracked object. A
  // copying collector reports a few runs per GC, so gc_end can find each run's records as one
  // slice of the records sorted by address (sweep_runs): nothing per dead record and nothing
  // per tracked object in the hooks. A GC that cannot go that way (its deaths are not one
  // evacuated range, something outside it moves: a mark-sweep's compaction) cards the logged
  // ranges at gc_end instead, and the hooks card again for the next 1, 2, 4, ... up to 1024 GCs
  // before logging is tried again.
  bool take_runs_this_gc() noexcept;

  // The only space's move cards (one entry per 256 bytes: the new granule + 1 of the one
  // tracked object that starts in the card and moved, or 0), for the
  // collector hooks to card a tracked object's move themselves instead of logging it
  // (Profiler::on_move), or null: several spaces, granules of another size, bits or cards that
  // could not be mapped. Fixed from set_spaces on.
  std::uint32_t* hook_cards() const noexcept { return hook_cards_; }
  // A collector hook's move of the tracked object that starts `off` bytes into the only space
  // (8-byte granules) to `to_off` (inside it): cards it, as card_moves would at gc_end, and
  // returns true; false, with nothing written, if another tracked object starts in its card or
  // another move carded it (the move is logged then, and apply sorts it out). A moved object's
  // card is written by the one collector thread that moves it: threads that move different
  // objects write different entries. ~40 instructions less per tracked move than a log carded
  // at gc_end (listleak-semispace, docs/results.md).
  static bool card_move(std::uint32_t* cards, const std::uint64_t* starts, std::uint64_t off, std::uint64_t to_off) noexcept {
    std::uint32_t& e = cards[off >> kMoveCardLog2];
    if (e != 0 || !sole_start_in_card(starts, off >> 3)) return false;
    e = static_cast<std::uint32_t>(to_off >> 3) + 1;
    return true;
  }
  // A collector hook's range move (on_move_range) of [off, off + bytes) of the only space
  // (8-byte granules) by `delta` bytes (to - from, modulo 2^64; the destination inside the
  // space): cards every tracked object that starts in it as card_move does, and returns how
  // many; -1, with none of them left carded, if one cannot be (the range is logged then). A
  // start whose card a move of this GC took already (the object moved twice: a protocol error)
  // is carded again where its word holds one start per card: the later move wins.
  static std::int64_t card_range(std::uint32_t* cards, const std::uint64_t* starts, std::uint64_t off, std::uint64_t bytes,
                                 std::uint64_t delta) noexcept;
  // Whether granule g (of 8 bytes) is the only start set in its 256-byte move card: the one
  // test that lets a card stand for a move, by the hooks (card_move), at gc_end (card_moves)
  // and back (cards_to_logs, which finds the source again as the card's one start). A card's 32
  // granules are one 32-bit half of a start-bit word, read at once.
  static bool sole_start_in_card(const std::uint64_t* starts, std::uint64_t g) noexcept {
    static_assert(kMoveCardLog2 == 8 && std::endian::native == std::endian::little,
                  "a card's 32 granules are one 32-bit half of a start-bit word");
    std::uint32_t in_card;
    std::memcpy(&in_card, reinterpret_cast<const unsigned char*>(starts) + (g >> 5) * 4, 4);
    return in_card == std::uint32_t{1} << (g & 31);
  }
  // The same test on the start-bit word that holds g, already loaded (card_range).
  static bool sole_start_in_word(std::uint64_t word, std::uint64_t g) noexcept {
    return static_cast<std::uint32_t>(word >> (g & 32)) == std::uint32_t{1} << (g & 31);
  }
  // Whether any bit of granules [g0, g1) is set in `words` (one bit per granule, as the start
  // bits), whole words at a time; g0 < g1. The words between the first and the last go 16 at a
  // time, ORed with no branch each (the compiler's vectors where it has them): sweep_runs tests
  // each run's destinations, and listleak-semispace's one long run spans ~2,300 words a GC, which
  // one by one took ~3 instructions a word.
  static bool any_bit_in(const std::uint64_t* words, std::uint64_t g0, std::uint64_t g1) noexcept {
    const std::uint64_t first = g0 >> 6, last = (g1 - 1) >> 6;
    const std::uint64_t head = head_mask(g0), tail = tail_mask(g1);
    if (first == last) return (words[first] & head & tail) != 0;
    if ((words[first] & head) != 0 || (words[last] & tail) != 0) return true;
    std::uint64_t w = first + 1;
    for (; w + 16 <= last; w += 16) {
      std::uint64_t any = 0;
      for (std::uint64_t i = 0; i < 16; ++i) any |= words[w + i];
      if (any != 0) return true;
    }
    for (; w < last; ++w)
      if (words[w] != 0) return true;
    return false;
  }
  // Whether the hooks may card this GC's moves (asked at gc_begin): no start claimed twice is
  // waiting to be resolved, which takes the record index and would turn every card back into a
  // log.
  bool hooks_may_card() const noexcept {
    return hook_cards_ != nullptr && !conflicts_pending_ && !alloc_conflict_.load(std::memory_order_relaxed);
  }

  // The collector hooks' filter (called from collector threads during a GC, when nothing
  // writes the start bits): false only if no tracked object starts in [a, a + bytes), a range
  // inside one space, at the pre-GC addresses the hooks report.
  bool may_hold_range(Address a, std::uint64_t bytes) const noexcept {
    if (bytes == 0) return false;
    for (std::size_t s = 0; s < spaces_.size(); ++s) {
      const Address off = a - spaces_[s].begin();
      if (off >= spaces_[s].size()) continue;
      if (!exact_starts_) return true;
      if (!starts_[s].mapped()) return false;  // a space that never held a record
      const unsigned lg = spaces_[s].log2_alignment();
      const std::uint64_t mask = (std::uint64_t{1} << lg) - 1;
      const std::uint64_t end = std::min(off + bytes, spaces_[s].size());
      return starts_[s].any_in((off + mask) >> lg, std::min((end + mask) >> lg, spaces_[s].granule_count()));
    }
    return false;
  }
  // Appends to `out` each address of `addrs` at which a tracked object starts (may_hold), with
  // the one space's bounds and bits loaded once for the whole batch (on_free_batch).
  void filter_starts(std::span<const Address> addrs, std::vector<Address>& out) const {
    if (spaces_.size() == 1 && exact_starts_) {
      if (!starts_[0].mapped()) return;
      const Address begin = spaces_[0].begin();
      const std::uint64_t size = spaces_[0].size();
      const unsigned lg = spaces_[0].log2_alignment();
      const std::uint64_t mask = (std::uint64_t{1} << lg) - 1;
      for (Address a : addrs) {
        const Address off = a - begin;
        if (off < size && (off & mask) == 0 && starts_[0].test(off >> lg)) out.push_back(a);
      }
      return;
    }
    for (Address a : addrs)
      if (may_hold(a)) out.push_back(a);
  }
  // may_hold for an address inside the only space (the collector hooks' short path).
  bool may_hold_in_only_space(Address a) const noexcept {
    if (!exact_starts_) return true;
    const HeapSpace& space = spaces_[0];
    if (!space.is_aligned(a)) return false;
    return starts_[0].test((a - space.begin()) >> space.log2_alignment());
  }
  // False only if no tracked object starts at `a` (until the next apply()). Always inlined:
  // the collector hooks call it once per event (with the packed trace records beside it, GCC
  // stopped inlining it into on_move's full path: +0.37 M instructions on points-semispace).
  OBJPROF_ALWAYS_INLINE bool may_hold(Address a) const noexcept {
    for (std::size_t s = 0; s < spaces_.size(); ++s) {
      const Address off = a - spaces_[s].begin();
      if (off >= spaces_[s].size()) continue;
      if (!exact_starts_) return true;
      if (!starts_[s].mapped() || !spaces_[s].is_aligned(a)) return false;
      return starts_[s].test(off >> spaces_[s].log2_alignment());
    }
    return false;
  }

  // Calls fn(addr, record&) for every record that is stale at `epoch` with threshold k and
  // that a full collection has seen alive since its last access: `full_after` is one past
  // the epoch of the latest full (not minor) GC, 0 if none yet.
  // `progressed(record)` adds the second condition (its owner's progress since the last access,
  // ProgressClocks); it is asked only about records that meet the first ones.
  template <class Progressed, class Fn>
  void for_each_stale(std::uint32_t epoch, std::uint32_t k, std::uint64_t full_after, Progressed&& progressed, Fn&& fn) {
    for (std::size_t s = 0; s < tables_.size(); ++s)
      for (TrackedRecord& r : tables_[s])
        if (idle_enough(r, epoch, k, full_after) && progressed(r)) fn(spaces_[s].address_of(r.granule), r);
  }
  // Whether some record not reported yet is stale by the same tests: stops at the first. A pass
  // that finds none keeps the earliest last access among the unreported records
  // (unreported_floor_); until `epoch` is k past it no record can pass the epoch test, so the
  // calls until then return false without a pass (a program whose live records are all either
  // reported or recently used passed over every one of them at every GC). The floor stays a
  // lower bound: last_access only grows, a reported record stays reported, and every record
  // that joins the tables later was born in the epoch of the pass or after it (gc_begin adopts
  // everything allocated before it; what is allocated inside a bracket counts in the next epoch).
  template <class Progressed>
  bool any_unreported_stale(std::uint32_t epoch, std::uint32_t k, std::uint64_t full_after, Progressed&& progressed) {
    if (std::uint64_t{unreported_floor_} + k > epoch) return false;
    std::uint32_t floor = epoch;
    for (const auto& t : tables_)
      for (const TrackedRecord& r : t) {
        if (r.size_flags & kReported) continue;
        if (idle_enough(r, epoch, k, full_after) && progressed(r)) return true;
        floor = std::min(floor, r.last_access);
      }
    unreported_floor_ = floor;
    return false;
  }

  // At least the number of addresses each_address_batch gives (the dead-tagged records count).
  std::size_t records_upper_bound() const noexcept {
    std::size_t n = 0;
    for (const auto& t : tables_) n += t.size();
    for (const auto& y : young_) n += y.size();
    return n;
  }
  // The address of every live record, the table's and the young adopted at gc_begin
  // (report_survivors asks the collector about each), `batch.size()` at a time: each time
  // `batch` is full, and once at the end for what is left, fn(the filled part). The scratch is
  // the caller's fixed batch, not a list of every record: a heap of ten million tracked objects
  // would otherwise need 80 MB more for one GC. fn must not change the records.
  template <class Fn>
  void each_address_batch(std::span<Address> batch, Fn&& fn) const {
    std::size_t n = 0;
    auto put = [&](Address a) {
      batch[n++] = a;
      if (n == batch.size()) {
        fn(batch);
        n = 0;
      }
    };
    for (std::size_t s = 0; s < tables_.size(); ++s) {
      const HeapSpace space = spaces_[s];
      for (const TrackedRecord& r : tables_[s])
        if (r.site_type != kDead) put(space.address_of(r.granule));
    }
    if (!young_.empty()) {
      const HeapSpace space = spaces_[0];
      for (const auto& y : young_)
        for (const TrackedRecord& r : y) put(space.address_of(r.granule));
    }
    if (n != 0) fn(batch.first(n));
  }

  // site_type = map(site_type) for every record (a detached thread's objects go to the program's
  // clock: ProgressClocks).
  template <class Map>
  void rebind(Map&& map) {
    for (auto& t : tables_)
      for (TrackedRecord& r : t)
        if (r.site_type != kDead) r.site_type = map(r.site_type);
    for (auto& y : young_)
      for (TrackedRecord& r : y) r.site_type = map(r.site_type);
  }

  static bool idle_enough(const TrackedRecord& r, std::uint32_t epoch, std::uint32_t k, std::uint64_t full_after) {
    return epoch - r.last_access >= k && epoch >= r.last_access && full_after > r.last_access;
  }

  std::uint64_t live() const noexcept;
  std::uint64_t bytes() const noexcept;
  std::uint32_t log2_granule(std::size_t space) const { return spaces_[space].log2_alignment(); }

 private:
  // One bit per granule of a space, mapped on first use (1/64 of the space in address space),
  // like the access bitmap: tables up to 2 MiB come with their pages (the filter reads them
  // across every freed range, and a page fault inside a GC costs more than a short collection's
  // whole profiler share), larger ones get memory only where bits were set (side_table_memory.h).
  class GranuleBits {
   public:
    // Maps bits for `granules` granules if not yet mapped; false if that failed.
    bool ensure(std::uint64_t granules) noexcept { return table_.ensure(static_cast<std::size_t>((granules + 64) / 64)); }
    bool mapped() const noexcept { return table_.data() != nullptr; }
    bool test(std::uint64_t g) const noexcept { return (table_.data()[g >> 6] >> (g & 63)) & 1; }
    void set(std::uint64_t g) noexcept { table_.data()[g >> 6] |= std::uint64_t{1} << (g & 63); }
    void clear(std::uint64_t g) noexcept { table_.data()[g >> 6] &= ~(std::uint64_t{1} << (g & 63)); }
    void set_span(std::uint64_t g0, std::uint64_t g1) noexcept;  // [g0, g1), g0 < g1
    void clear_span(std::uint64_t g0, std::uint64_t g1) noexcept;  // whole words: only for scratch bits
    void clear_exact(std::uint64_t g0, std::uint64_t g1) noexcept;  // [g0, g1), g0 < g1
    bool any_in(std::uint64_t g0, std::uint64_t g1) const noexcept { return g0 < g1 && any_bit_in(table_.data(), g0, g1); }
    std::uint64_t* words() noexcept { return table_.data(); }

   private:
    SideTable<std::uint64_t> table_;
  };

  int space_of(Address a) const noexcept;
  // Appends the adopted young records to the only space's table (a GC that needs every record
  // in the table: resizes, moves, conflicts), in adoption order, after the older records.
  void settle_young();
  // last_access = epoch for every record of space s whose granule is marked in `bits`.
  void apply_bits(std::size_t space, const BitmapSnapshot& bits, std::uint32_t epoch);
  template <class Start, class Span>
  bool for_each_freed(std::size_t s, std::span<const Address> frees, std::span<const FreeRangeLog> runs, Start&& start,
                      Span&& span) const;
  // A GC without moves: clears the start bits of space s at its freed starts and in its freed
  // ranges (every one a dead record's); false if none is in space s.
  bool retire_starts(std::size_t s, std::span<const Address> frees, std::span<const FreeRangeLog> runs);
  // Sets the bits of `freed_[s]` for a GC's freed starts and ranges; false if none is in space s.
  bool mark_freed(std::size_t s, std::span<const Address> frees, std::span<const FreeRangeLog> runs);
  // Clears the start bits under them (the dead's, after a pass that left them), and them.
  void retire_freed(std::size_t s, std::span<const Address> frees, std::span<const FreeRangeLog> runs);
  // Clears them again (only the words set), so the scratch bits start the next GC clear.
  void unmark_freed(std::size_t s, std::span<const Address> frees, std::span<const FreeRangeLog> runs);
  // The one pass over a table of space s (and then its young records) of a GC with single moves
  // (at least one, logged in `moves` or carded by the hooks) and no range moves: drops the dead
  // (the GC's frees and free ranges marked in freed_[s]; a GC whose one death is one free range
  // tests each record against the range instead) with their start bits, applies `bits`, and
  // moves the moved (all in space s). Returns the dead.
  // The pass of a GC whose moves the hooks logged as runs (take_runs_this_gc), when the runs can
  // stand for every move: one space, the GC's deaths one free range (the evacuated area) and
  // single frees, every run's source inside the range and its destination outside it, no two
  // sources overlapping. The records inside the range are kept as parts in ascending granule
  // order (the table as the last sweep_runs wrote it; a young vector whose thread saw it rise;
  // the rest copied and sorted), so each run's records are one slice of each part (galloping
  // searches); they go to the new table in destination order, with their new granules, start
  // bits and last accesses, and the table comes out in address order when the destinations do
  // not interleave. The records outside the range stay unless a single free took their start.
  // The dead inside it are never visited. False, with nothing changed, when the GC does not
  // qualify (or two records share a granule: a start claimed twice needs the index).
  // `sorted`: how many of the table's first records the last sweep_runs left in address order.
  bool sweep_runs(const BitmapSnapshot* bits, std::uint32_t epoch, std::span<const MoveLog> moves,
                  std::span<const RangeMoveLog> ranges, std::span<const Address> frees, const FreeRangeLog& freed,
                  std::size_t sorted, ApplyResult& res);
  // Cards the logged `ranges` (card_range, as the hooks would have) and returns those it could
  // not card, adding the carded objects to `hook_carded`: a GC whose hooks logged its runs
  // (take_runs_this_gc) and that sweep_runs could not take.
  std::span<const RangeMoveLog> card_logged_ranges(std::span<const RangeMoveLog> ranges, std::uint64_t& hook_carded);
  std::uint64_t sweep_table(std::size_t s, const BitmapSnapshot* bits, std::uint32_t epoch,
                            std::vector<MoveLog>& moves, std::uint64_t hook_carded, std::span<const Address> frees,
                            std::span<const FreeRangeLog> free_ranges, ApplyResult& res);
  // move_cards_[s] over a GC's logged moves (the card of each source -> its new granule + 1),
  // sparing the sources in freed_[s] when `spare`; returns how many it carded, or -1, with none
  // of them left in the cards, if two sources share a card (a hook's card included), another
  // record starts in a source's card, or a move leaves the space (the index of the moves decides
  // then). uncard_moves clears them all.
  std::int64_t card_moves(std::size_t s, std::span<const MoveLog> moves, bool spare);
  void uncard_moves(std::size_t s, std::span<const MoveLog> moves);
  // Appends the `carded` moves the hooks carded in space s to `moves` and clears their cards, for
  // a GC whose cards cannot serve after all (the index of the moves decides then): each source
  // is the one start in its card, a record's, so the records find them.
  void cards_to_logs(std::size_t s, std::vector<MoveLog>& moves, std::uint64_t carded);
  // Clears every card of space s: a scan of the card table, for cards a move of no record left
  // (a protocol violation).
  void clear_cards(std::size_t s);
  unsigned move_card_shift(std::size_t s) const noexcept;  // granule -> card of space s
  // The same pass for a GC without moves (mark-sweep), after retire_starts: a compaction of the
  // table that drops each record whose start bit is clear (when `any_freed`).
  std::uint64_t sweep_unmoved(std::size_t s, const BitmapSnapshot* bits, std::uint32_t epoch, bool any_freed);
  // index_[s] over a GC's moves (pre-GC granule -> move) instead of the records, and its lookup
  // (the move's position, or -1). `spare`: also clears the moves' sources in freed_[s]
  // (spare_moved, in the same loop).
  void index_moves(std::size_t s, std::span<const MoveLog> moves, bool spare);
  std::int64_t find_move(std::size_t s, std::uint32_t g) const noexcept;
  // Empties index_[s], sized for `entries`.
  void clear_index(std::size_t s, std::size_t entries);
  // Builds index_[s] over tables_[s], killing the earlier of two records at one granule.
  std::uint64_t build_index(std::size_t s);
  // Index of the live record of space s starting at granule g, or -1.
  std::int64_t lookup(std::size_t s, std::uint32_t g) const noexcept;
  // The live record starting at address a: sets s and returns its index, or -1.
  std::int64_t locate(Address a, std::size_t& s) const noexcept;
  // claim_start for the records of space s from index `first` on.
  void claim_from(std::size_t s, std::size_t first) noexcept;
  // Claims the starts of `records` (of space s).
  void claim_all(std::size_t s, std::span<const TrackedRecord> records) noexcept;
  // A record starts at granule g of space s from now on (a second one there is a conflict).
  void claim_start(std::size_t s, std::uint64_t g) noexcept;
  // Kills the live records of space s that start at a freed address or in a freed range;
  // `erase` drops them (and their start bits) from the table, otherwise they are marked dead.
  // Returns how many died.
  // The GC's moves and range moves spare what they move (see spare_moved).
  std::uint64_t kill_freed(std::size_t s, std::span<const Address> frees, std::span<const FreeRangeLog> runs,
                           std::span<const MoveLog> moves, std::span<const RangeMoveLog> ranges);
  std::uint64_t kill_freed_by_search(std::size_t s, std::span<const Address> frees, std::span<const FreeRangeLog> runs,
                                     std::span<const MoveLog> moves, std::span<const RangeMoveLog> ranges);
  // Clears the freed bits (mark_freed) of space s at the sources of the GC's moves and range
  // moves: a free range never kills an object the same GC moves.
  void spare_moved(std::size_t s, std::span<const MoveLog> moves, std::span<const RangeMoveLog> ranges);

  std::vector<HeapSpace> spaces_;
  std::vector<RecordTable> tables_;
  // The only space's young records, adopted at gc_begin from the allocating threads (one
  // vector each, in adoption order) and settled by apply(); `spare_` holds them emptied until
  // the next adoption hands them back to the threads.
  std::vector<std::vector<TrackedRecord>> young_;
  std::vector<std::uint8_t> young_rising_;  // per young vector, whether its records rise (adopt_young)
  std::vector<std::vector<TrackedRecord>> spare_;
  // Per space: where live records start (exact_starts_: every bit was mapped; if a mapping
  // failed, the filter lets every event through and every GC builds the index).
  std::vector<GranuleBits> starts_;
  bool exact_starts_ = true;
  bool conflicts_pending_ = false;  // a start claimed twice: the next apply() builds the index
  // No record without kReported was last accessed before this epoch (any_unreported_stale).
  std::uint32_t unreported_floor_ = 0;
  std::uint64_t* alloc_starts_ = nullptr;
  std::atomic<bool> alloc_conflict_{false};  // claim_at_alloc found a start claimed twice
  // Scratch reused by every apply(), so a GC allocates nothing in the steady state.
  // index_[s]: slots of (granule << 32 | record index + 1), 0 = empty; mask_[s] = size - 1.
  std::vector<std::vector<std::uint64_t>> index_;
  std::vector<std::uint64_t> mask_;
  std::vector<std::vector<Address>> new_addr_;
  std::vector<RecordTable> next_;
  std::vector<PendingResize> resize_scratch_;
  std::vector<FreeRangeLog> free_scratch_;
  std::vector<Address> moved_scratch_;  // kill_freed_by_search: the GC's moves' sources, sorted
  // Per space, one bit per granule: the starts a GC's frees and free ranges cover (apply, then cleared).
  std::vector<GranuleBits> freed_;
  // Per space, the moves of a GC by the card of their source (card_moves): a card is 256 bytes,
  // so the sources of tracked objects of the default threshold never share one; objects that
  // reach it by a resize may, and then the GC falls back to the index. 4 bytes per card (1/64 of
  // a space), mapped at set_spaces for the hooks (hook_cards) or on first use; zero between GCs.
  std::vector<SideTable<std::uint32_t>> move_cards_;
  std::uint32_t* hook_cards_ = nullptr;  // move_cards_[0] when the hooks may use it (hook_cards)
  // The first records of the only space's table that are in ascending granule order: all of
  // them after sweep_runs, none after any other apply() (only apply() changes granules; adds
  // and resizes append), so sweep_runs checks only what came since.
  std::size_t sorted_records_ = 0;
  // take_runs_this_gc: GCs left before the hooks log runs again, and the next such wait.
  std::uint32_t runs_wait_ = 0, runs_backoff_ = 1;
  // sweep_runs' scratch: the GC's runs (granules) in destination order, their order by source,
  // and the logged ranges that card_logged_ranges could not card.
  struct Run {
    std::uint32_t from, to, count;
  };
  std::vector<Run> runs_;
  std::vector<std::uint64_t> runs_by_dest_;  // (destination << 32 | index into runs_), sorted
  std::vector<std::pair<const TrackedRecord*, const TrackedRecord*>> sorted_parts_, slices_;
  std::vector<TrackedRecord> in_range_, outside_;
  std::vector<std::size_t> compact_later_;  // young vectors sweep_runs compacts once it cannot fail
  std::vector<RangeMoveLog> uncarded_ranges_;
  // Scratch of sweep_table: the moved records' old and new granules, and the old granules of
  // those that left the space.
  std::vector<std::uint32_t, UninitializedAllocator<std::uint32_t>> moved_from_, moved_to_, left_granules_;
};

}  // namespace objprof::internal
