#include "analyzer_back.h"

#include "parallel.h"

#include <tbb/enumerable_thread_specific.h>

#include <algorithm>

namespace objprof::analysis::internal {

namespace {
// How many operations ahead the batched loops prefetch (enough to cover a memory latency).
constexpr std::size_t kAhead = 16;
constexpr std::uint32_t kMissing = AddressMap::kMissing;
}  // namespace

std::uint64_t Back::size_of(ObjectId o) const {
  const std::uint32_t s = a_.objects.size_field(o);
  return s != ChainStore::kBigSize ? s : big_sizes_.at(o);
}

void Back::kill(ObjectId id, std::uint32_t at) {
  a_.objects.set_dead(id, at);
  const std::uint64_t size = size_of(id);
  --a_.live_objects;
  a_.live_bytes -= size;
  if (at < a_.gcs.size()) {
    ++a_.gcs[at].freed_objects;
    a_.gcs[at].freed_bytes += size;
  }
}

// The previous occupant of an address that a new object (or a moved one) now takes had no
// free record: it died at the latest GC it could have died in.
void Back::infer_death(ObjectId prev, std::uint32_t at) {
  kill(prev, std::max(at, a_.objects.birth_epoch(prev)));
  a_.objects.add_flags(prev, kDeathInferred);
  ++a_.stats.inferred_deaths;
}

void Back::place(ObjectId id, std::uint64_t addr, std::uint64_t size, std::uint32_t infer_at) {
  if (a_.objects.size_field(id) == ChainStore::kBigSize) big_sizes_[id] = size;
  ++a_.live_objects;
  a_.live_bytes += size;
  a_.stats.peak_live_objects = std::max(a_.stats.peak_live_objects, a_.live_objects);
  const std::uint32_t prev = map_.put(addr, id);
  if (prev != kMissing) infer_death(prev, infer_at);
}

void Back::apply(const EventBatch& batch) {
  const std::vector<Event>& ev = batch.events;
  const std::size_t n = ev.size();
  std::size_t places = 0;
  for (const Event& e : ev) places += e.kind == Event::kPlace;
  map_.reserve_more(places);  // no rehash inside the loop: prefetched lines stay valid
  for (std::size_t i = 0; i < n; ++i) {
    if (i + kAhead < n && ev[i + kAhead].kind == Event::kPlace && !in_gc_) map_.prefetch(ev[i + kAhead].x);
    const Event& e = ev[i];
    switch (e.kind) {
      case Event::kPlace:
        if (in_gc_) born_in_gc_.push_back({e.id, e.x, e.y});  // after the GC's moves and frees
        else place(e.id, e.x, e.y, epoch_ > 0 ? epoch_ - 1 : 0);
        break;
      case Event::kFree:
      case Event::kMove:
      case Event::kRange:
        ops_.push_back({e.kind, e.x, e.y, e.z});
        if (!in_gc_) apply_gc(epoch_);  // not produced by the profiler; applied at once
        break;
      case Event::kGcBegin: {
        in_gc_ = true;
        GcRecord r;
        r.epoch = static_cast<std::uint32_t>(e.x);
        r.kind = static_cast<trace::GcKind>(e.gc_kind);
        r.bytes_begin = e.y;
        a_.gcs.push_back(r);
        break;
      }
      case Event::kGcEnd: {
        apply_gc(epoch_);
        GcRecord& r = a_.gcs.back();
        r.ended = true;
        r.bytes_end = e.y;
        r.live_objects_after = a_.live_objects;
        r.live_bytes_after = a_.live_bytes;
        note_memory();
        in_gc_ = false;
        ++epoch_;
        break;
      }
      case Event::kBits: {
        const std::span<const std::pair<std::uint64_t, std::uint64_t>> words(batch.words.data() + e.y, e.z);
        std::uint64_t bits = 0;
        for (auto [idx, word] : words) bits += static_cast<std::uint64_t>(__builtin_popcountll(word));
        a_.stats.marked_bits += bits;
        if (in_gc_ && !a_.gcs.empty()) a_.gcs.back().marked_bits += bits;
        resolve_bits(e.x, e.id, words);
        break;
      }
      case Event::kResize:
        // The profiler writes a bracket's mutator records after its gc-end, so the object is
        // in the map; a resize of an address nobody holds is counted, not guessed at.
        if (const std::uint32_t id = map_.find(e.x); id != kMissing) a_.objects.set_footprint(id, e.y);
        else ++a_.stats.unknown_resizes;
        break;
      case Event::kStale:
        if (in_gc_) {
          stale_.push_back(e.x);
        } else if (const std::uint32_t id = map_.find(e.x); id != kMissing) {
          a_.objects.add_flags(id, kReportedStale);
        }
        break;
    }
  }
}

void Back::resolve_bits(std::uint64_t begin, std::uint32_t e, std::span<const std::pair<std::uint64_t, std::uint64_t>> words) {
  if (log2_granule_ != static_cast<unsigned>(__builtin_ctz(a_.header.granule_bytes)))
    log2_granule_ = static_cast<unsigned>(__builtin_ctz(a_.header.granule_bytes));
  const unsigned lg = log2_granule_;
  if (words.size() < opt_.parallel_bitmap_words) {
    bit_addrs_.clear();
    for (auto [idx, word] : words) {
      while (word) {
        const unsigned b = static_cast<unsigned>(__builtin_ctzll(word));
        word &= word - 1;
        bit_addrs_.push_back(begin + ((idx * 64 + b) << lg));
      }
    }
    const std::size_t n = bit_addrs_.size();
    ids_.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      if (i + kAhead < n) map_.prefetch(bit_addrs_[i + kAhead]);
      ids_[i] = map_.find(bit_addrs_[i]);
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (i + kAhead < n && ids_[i + kAhead] != kMissing) a_.objects.prefetch_access(ids_[i + kAhead]);
      if (ids_[i] == kMissing) {
        ++a_.stats.unresolved_bits;
      } else {
        ++a_.stats.resolved_bits;
        a_.objects.mark_accessed(ids_[i], e);
      }
    }
    return;
  }
  // A large dump: resolve in parallel. The map is read-only here and each object appears at
  // most once per epoch (one bit per object start), so the inline run updates touch distinct
  // objects; the rare gap (a new run in the side array) is appended afterwards.
  struct Local {
    std::uint64_t resolved = 0, unresolved = 0;
    std::vector<ObjectId> gaps;
  };
  tbb::enumerable_thread_specific<Local> locals;
  parallel_range(words.size(), 1024, [&](const tbb::blocked_range<std::size_t>& r) {
    Local& l = locals.local();
    for (std::size_t i = r.begin(); i != r.end(); ++i) {
      auto [idx, word] = words[i];
      while (word) {
        const unsigned b = static_cast<unsigned>(__builtin_ctzll(word));
        word &= word - 1;
        const std::uint32_t id = map_.find(begin + ((idx * 64 + b) << lg));
        if (id == kMissing) {
          ++l.unresolved;
        } else {
          ++l.resolved;
          if (!a_.objects.try_extend_access(id, e)) l.gaps.push_back(id);
        }
      }
    }
  });
  for (Local& l : locals) {
    a_.stats.resolved_bits += l.resolved;
    a_.stats.unresolved_bits += l.unresolved;
    for (ObjectId id : l.gaps) a_.objects.start_run(id, e);
  }
}

void Back::take_range(const Op& op) {
  const std::uint64_t end = op.from + op.bytes;
  const std::uint64_t delta = op.to - op.from;  // modular: also right for moves down
  const std::uint64_t granules = op.bytes >> log2_granule_;
  const std::size_t before = relocs_.size();
  // Probe every granule of the range, or walk the whole map: whichever is less work.
  if (granules <= 4 * static_cast<std::uint64_t>(map_.size()) + 64) {
    for (std::uint64_t addr = op.from; addr < end; addr += std::uint64_t{1} << log2_granule_) {
      const std::uint32_t id = map_.erase(addr);
      if (id != kMissing) relocs_.push_back({id, addr + delta});
    }
  } else {
    std::vector<std::pair<std::uint64_t, ObjectId>> inside;
    map_.for_each([&](std::uint64_t addr, std::uint32_t id) {
      if (addr >= op.from && addr < end) inside.emplace_back(addr, id);
    });
    for (auto [addr, id] : inside) {
      map_.erase(addr);
      relocs_.push_back({id, addr + delta});
    }
  }
  if (relocs_.size() == before) ++a_.stats.unknown_moves;
}

void Back::apply_gc(std::uint32_t e) {
  log2_granule_ = static_cast<unsigned>(__builtin_ctz(a_.header.granule_bytes ? a_.header.granule_bytes : 8));
  relocs_.clear();
  // Pass 1: every source leaves the pre-GC heap (map lines prefetched a few ops ahead)...
  const std::size_t n = ops_.size();
  ids_.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (i + kAhead < n) map_.prefetch(ops_[i + kAhead].from);
    if (ops_[i].kind == Event::kRange) {
      ids_[i] = kMissing;
      take_range(ops_[i]);
    } else {
      ids_[i] = map_.erase(ops_[i].from);
    }
  }
  // ...then the objects are updated (their records prefetched the same way).
  for (std::size_t i = 0; i < n; ++i) {
    if (i + kAhead < n && ids_[i + kAhead] != kMissing) a_.objects.prefetch_update(ids_[i + kAhead]);
    const Op& op = ops_[i];
    if (op.kind == Event::kRange) continue;
    if (ids_[i] == kMissing) ++(op.kind == Event::kFree ? a_.stats.unknown_frees : a_.stats.unknown_moves);
    else if (op.kind == Event::kFree) kill(ids_[i], e);
    else relocs_.push_back({ids_[i], op.to});
  }
  // Pass 2: every destination.
  map_.reserve_more(relocs_.size());
  for (std::size_t i = 0; i < relocs_.size(); ++i) {
    if (i + kAhead < relocs_.size()) map_.prefetch(relocs_[i + kAhead].to);
    const Relocation& r = relocs_[i];
    if (r.to == 0) {  // a move to address 0 cannot be represented; the object is lost
      ++a_.stats.unknown_moves;
      kill(r.id, e);
      continue;
    }
    const std::uint32_t prev = map_.put(r.to, r.id);
    if (prev != kMissing) infer_death(prev, e);
    a_.objects.add_move(r.id, e, r.to);
    if (e < a_.gcs.size()) ++a_.gcs[e].moved_objects;
  }
  ops_.clear();
  // Allocations made while the GC ran.
  for (const Born& b : born_in_gc_) place(b.id, b.addr, b.size, e);
  born_in_gc_.clear();
  // Online leak reports name post-GC addresses.
  for (std::uint64_t addr : stale_)
    if (const std::uint32_t id = map_.find(addr); id != kMissing) a_.objects.add_flags(id, kReportedStale);
  stale_.clear();
}

void Back::note_memory() {
  const std::uint64_t now = map_.memory_bytes() + ops_.capacity() * sizeof(Op) + relocs_.capacity() * sizeof(Relocation) +
                            born_in_gc_.capacity() * sizeof(Born) + ids_.capacity() * 4 + bit_addrs_.capacity() * 8;
  peak_ = std::max(peak_, now);
}

bool Back::finish() {
  note_memory();
  if (!in_gc_) return false;
  // The trace stops inside GC e: its bits were dumped, its moves and frees so far are
  // applied, but it never finished.
  apply_gc(epoch_);
  in_gc_ = false;
  ++epoch_;
  return true;
}

}  // namespace objprof::analysis::internal
