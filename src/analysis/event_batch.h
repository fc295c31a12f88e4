// EventBatch (private): what the analyzer's front half hands its back half.
//
// The front (analyzer_front.h) reads records, interns definitions and numbers every new
// object; it passes on, in file order, only what needs the address map: placements of new
// objects (with the fields the back writes), frees, moves, GC brackets, access bits and stale
// reports, each tagged with its shard. Batches are the unit of hand-off between the front and
// the back's shards (analyzer_back.h) and the unit over which the back prefetches its table
// lookups.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "fixed_list.h"

#include "objprof/config.h"

namespace objprof::analysis::internal {

// The back's shards each own the address map of some 64 KiB windows of the heap, so that
// consecutive addresses stay in one shard. The windows are cut into groups of `shards`
// consecutive ones, and each shard owns exactly one window of every group: which one is
// rotated by a hash of the group's number, so that no stride in a heap's layout can starve a
// shard. A contiguous heap is thus shared out evenly, and a shard's windows are numbered
// densely by their group (AddressMap hashes that number). Had each window's shard been drawn
// at random, a shard's windows would land at random places in its AddressMap, their spans of
// consecutive slots piling up into probe runs thousands of slots long (measured on a copying
// GC's trace with 8 shards: a mean of 920 slots to find an address missing, against 0.7 with
// one shard).
inline constexpr unsigned kShardWindowBits = 16;
inline constexpr unsigned kMaxShards = 128;  // Event::shard is a byte; a power of two
// The shard count for about `wanted` shards: a power of two in [1, kMaxShards].
inline unsigned shard_count(unsigned wanted) noexcept {
  unsigned n = 1;
  while (n < wanted && n < kMaxShards) n *= 2;
  return n;
}
// log2 of the windows in a group (`shards` must be a power of two: shard_count): how
// shard_of numbers a window's group, and how a shard's AddressMap numbers its windows, which
// must agree for the map's dense numbering to hold.
inline unsigned shard_group_log2(unsigned shards) noexcept {
  return static_cast<unsigned>(__builtin_ctz(shards));
}
// `shards` must be a power of two (shard_count).
inline unsigned shard_of(std::uint64_t addr, unsigned shards) noexcept {
  const std::uint64_t window = addr >> kShardWindowBits;
  // The group's number, hashed (a shift: a division by a variable would cost tens of cycles).
  std::uint64_t h = (window >> shard_group_log2(shards)) * 0xD6E8'FEB8'6659'FD93ull;
  h ^= h >> 29;
  h *= 0xBF58'476D'1CE4'E5B9ull;
  h ^= h >> 32;
  return static_cast<unsigned>((window + h) & (shards - 1));
}

// shard_of with the last window's answer kept, for one shard count: placements and a copying
// GC's destinations come in runs of addresses within one window.
class ShardCache {
 public:
  unsigned operator()(std::uint64_t addr, unsigned shards) noexcept {
    if (const std::uint64_t w = addr >> kShardWindowBits; w != window_) {
      window_ = w;
      shard_ = shard_of(addr, shards);
    }
    return shard_;
  }

 private:
  std::uint64_t window_ = ~std::uint64_t{0};  // no address's window
  unsigned shard_ = 0;
};

// log2 of the trace's granule (8 bytes until the header says otherwise): how the front routes
// bitmap words to shards and how the back turns them into addresses, which must agree.
inline unsigned log2_granule(std::uint32_t granule_bytes) noexcept {
  return static_cast<unsigned>(__builtin_ctz(granule_bytes ? granule_bytes : 8));
}

struct Event {
  enum Kind : std::uint8_t { kPlace, kFree, kMove, kRange, kGcBegin, kGcEnd, kBits, kStale, kResize, kFreeRange } kind;
  std::uint8_t gc_kind = 0;  // kGcBegin
  // The shard it is for (kPlace, kFree, kMove, kStale, kResize: x's; kBits: the words are
  // those with bits in this shard's windows), computed once by the front.
  std::uint8_t shard = 0;
  std::uint8_t flags = 0;  // kPlace: the new object's
  // kPlace: the new object; kBits: the epoch; kFree/kMove/kRange/kFreeRange: its place among the
  // running GC's frees and moves (the order a GC's destinations are taken in).
  std::uint32_t id = 0;
  // kPlace: addr, size, bytes allocated before it. kFree: addr. kMove/kRange: from, to, bytes.
  // kFreeRange: addr, -, bytes (every shard sees it, as kRange).
  // kGcBegin/kGcEnd: epoch, bytes allocated. kBits: space begin, first word in
  // EventBatch::words, word count. kStale: addr. kResize: addr, bytes.
  std::uint64_t x = 0, y = 0, z = 0;
  // kPlace: the new object's allocation context and birth epoch. The back's shard writes the
  // object's fields (ChainStore::init), so that their first touch is spread over the workers.
  std::uint32_t ctx = 0, epoch = 0;
};
static_assert(sizeof(Event) == 40);

inline constexpr std::size_t kBatchCapacity = 4096;

// A batch's events. The front appends one per record after testing EventBatch::full.
using EventList = FixedList<Event, kBatchCapacity>;

struct EventBatch {
  static constexpr std::size_t kCapacity = kBatchCapacity;
  EventList events;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> words;  // bitmap words of kBits events
  // With more than one shard (set_shards): per shard, the indexes of its events and of those
  // every shard must see (GC brackets, range moves, free ranges), in order. Flat, a full
  // batch's room per shard, so that routing an event is one store and one count (vectors'
  // growth checks cost the front ~25 instructions an event).
  std::vector<std::uint32_t> route_slots;
  // How many of each shard's slots are taken. Cache lines of their own: the front counts into
  // them at every event while the back's threads read another batch's (as small vectors,
  // the batches' counts sat side by side in the heap and shared lines).
  struct alignas(kCacheLine) RouteSizes {
    std::array<std::uint32_t, kMaxShards> n{};
  };
  std::unique_ptr<RouteSizes> route_sizes;
  unsigned route_shards = 0;
  // The route slots of a batch split over `shards`, and what they take (counted in the
  // analyzer's peak memory).
  static constexpr std::size_t route_slot_count(unsigned shards) noexcept { return shards > 1 ? shards * kCapacity : 0; }
  static constexpr std::size_t route_bytes(unsigned shards) noexcept {
    return shards > 1 ? route_slot_count(shards) * sizeof(std::uint32_t) + sizeof(RouteSizes) : 0;
  }
  void set_shards(unsigned shards) {
    route_slots.assign(route_slot_count(shards), 0);
    route_shards = shards > 1 ? shards : 0;
    if (route_shards > 0 && !route_sizes) route_sizes = std::make_unique<RouteSizes>();
    if (route_sizes) route_sizes->n.fill(0);
  }
  std::size_t shards() const noexcept { return route_shards; }
  void route_to(unsigned shard, std::uint32_t index) noexcept { route_slots[shard * kCapacity + route_sizes->n[shard]++] = index; }
  std::span<const std::uint32_t> route(unsigned shard) const noexcept {
    return {route_slots.data() + std::size_t{shard} * kCapacity, route_sizes->n[shard]};
  }
  // Set by the front: the batch must be applied in file order on one thread — it holds a free
  // or move outside a GC (applied at once), or bitmap dumps of two epochs. (A GC end is
  // always its batch's last event: the front ends the batch there.)
  bool in_order = false;
  bool has_bits = false;
  std::uint32_t bits_epoch = 0;
  std::vector<std::uint32_t> gc_begins;  // indexes of its kGcBegin events
  bool full() const noexcept { return events.full(); }
  void clear() noexcept {
    events.clear();
    words.clear();
    if (route_sizes) std::fill_n(route_sizes->n.begin(), route_shards, 0);
    in_order = false;
    has_bits = false;
    gc_begins.clear();
  }
};

}  // namespace objprof::analysis::internal
