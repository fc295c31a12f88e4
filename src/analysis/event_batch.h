// EventBatch (private): what the analyzer's front half hands its back half.
//
// The front (analyzer_front.h) reads records, interns definitions and appends every new
// object to the ChainStore; it passes on, in file order, only what needs the address map:
// placements of new objects, frees, moves, GC brackets, access bits and stale reports. Batches
// are the unit of hand-off between the two threads of analyze() and the unit over which the
// back prefetches its table lookups.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace objprof::analysis::internal {

struct Event {
  enum Kind : std::uint8_t { kPlace, kFree, kMove, kRange, kGcBegin, kGcEnd, kBits, kStale, kResize } kind;
  std::uint8_t gc_kind = 0;  // kGcBegin
  std::uint32_t id = 0;      // kPlace: the new object; kBits: the epoch
  // kPlace: addr, size. kFree: addr. kMove/kRange: from, to, bytes. kGcBegin/kGcEnd: epoch,
  // bytes allocated. kBits: space begin, first word in EventBatch::words, word count.
  // kStale: addr. kResize: addr, bytes.
  std::uint64_t x = 0, y = 0, z = 0;
};
static_assert(sizeof(Event) == 32);

struct EventBatch {
  static constexpr std::size_t kCapacity = 8192;
  std::vector<Event> events;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> words;  // bitmap words of kBits events
  bool full() const noexcept { return events.size() >= kCapacity; }
  void clear() noexcept {
    events.clear();
    words.clear();
  }
};

}  // namespace objprof::analysis::internal
