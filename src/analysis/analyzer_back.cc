#include "analyzer_back.h"

#include "objprof/config.h"
#include "parallel.h"

#include <tbb/enumerable_thread_specific.h>

#include <algorithm>
#include <thread>

namespace objprof::analysis::internal {

namespace {
// How many operations ahead the batched loops prefetch (enough to cover a memory latency).
constexpr std::size_t kAhead = 16;
constexpr std::uint32_t kMissing = AddressMap::kMissing;
}  // namespace

Back::Back(TraceAnalysis& a, const AnalyzerOptions& options, unsigned shards, Crew* crew) : a_(a), opt_(options), crew_(crew) {
  shards = shard_count(shards);
  for (unsigned i = 0; i < shards; ++i) shards_.push_back(std::make_unique<Shard>(i, shards));
  if (crew_) crew_->set_background(&background_);
}

void Back::run_shards(const std::function<void(unsigned)>& job) {
  if (crew_) crew_->run(static_cast<unsigned>(shards_.size()), job);
  else
    for (unsigned i = 0; i < shards_.size(); ++i) job(i);
}

Back::~Back() {
  if (crew_) crew_->set_background(nullptr);  // no thread still runs apply_queued after this
}

Back::GcDelta& Back::Counters::gc(std::uint32_t epoch) {
  // Nearly every count lands in the running GC's record: look there first.
  for (auto it = gcs.rbegin(); it != gcs.rend(); ++it)
    if (it->epoch == epoch) return *it;
  return gcs.emplace_back(GcDelta{epoch});
}

std::uint64_t Back::size_of(ObjectId o) const {
  const std::uint32_t s = a_.objects.size_field(o);
  if (s != ChainStore::kBigSize) return s;
  const std::lock_guard lock(big_mutex_);
  return big_sizes_.at(o);
}

// kill, place, init_object and mark run once per event or marked bit: inlined where the back
// applies events (a call's frame cost ~15 instructions, 6.5 M calls on a 1.5M-object trace).
OBJPROF_ALWAYS_INLINE void Back::kill(Counters& c, ObjectId id, std::uint32_t at, std::size_t gcs_seen) {
  a_.objects.set_dead(id, at);
  const std::uint64_t size = size_of(id);
  --c.live_objects;
  c.live_bytes -= size;
  if (at < gcs_seen) {
    GcDelta& d = c.gc(at);
    ++d.freed_objects;
    d.freed_bytes += size;
  }
}

// The previous occupant of an address that a new object (or a moved one) now takes had no
// free record: it died at the latest GC it could have died in.
void Back::infer_death(Counters& c, ObjectId prev, std::uint32_t at, std::size_t gcs_seen) {
  kill(c, prev, std::max(at, a_.objects.birth_epoch(prev)), gcs_seen);
  a_.objects.add_flags(prev, kDeathInferred);
  ++c.inferred_deaths;
}

// The occupant it replaces dies first, so the live count never counts both (and only grows
// between GCs: its peak is reached where a GC begins to collect or the trace ends).
OBJPROF_ALWAYS_INLINE void Back::place(Shard& s, Counters& c, ObjectId id, std::uint64_t addr, std::uint64_t size, std::uint32_t infer_at,
                 std::size_t gcs_seen) {
  if (a_.objects.size_field(id) == ChainStore::kBigSize) {
    const std::lock_guard lock(big_mutex_);
    big_sizes_[id] = size;
  }
  const std::uint32_t prev = s.map.put(addr, id);
  if (prev != kMissing) infer_death(c, prev, infer_at, gcs_seen);
  ++c.live_objects;
  c.live_bytes += size;
}

// The new object's fields, written by the shard that places it (ChainStore::init).
OBJPROF_ALWAYS_INLINE void Back::init_object(const Event& e) noexcept { a_.objects.init(e.id, e.ctx, e.y, e.x, e.epoch, e.z, e.flags); }

OBJPROF_ALWAYS_INLINE void Back::mark(Shard& s, ObjectId id, std::uint32_t epoch, bool defer) {
  if (a_.objects.try_extend_access(id, epoch)) return;
  if (defer) s.gaps.emplace_back(id, epoch);
  else a_.objects.start_run(id, epoch);
}

void Back::merge(Counters& c) {
  a_.live_objects += c.live_objects;
  a_.live_bytes += c.live_bytes;
  AnalysisStats& st = a_.stats;
  st.inferred_deaths += c.inferred_deaths;
  st.unknown_frees += c.unknown_frees;
  st.range_freed += c.range_freed;
  st.unknown_moves += c.unknown_moves;
  st.unknown_resizes += c.unknown_resizes;
  st.marked_bits += c.marked_bits;
  st.resolved_bits += c.resolved_bits;
  st.unresolved_bits += c.unresolved_bits;
  for (const GcDelta& d : c.gcs) {
    GcRecord& r = a_.gcs[d.epoch];
    r.freed_objects += d.freed_objects;
    r.freed_bytes += d.freed_bytes;
    r.moved_objects += d.moved_objects;
    r.marked_bits += d.marked_bits;
  }
  std::vector<GcDelta> keep = std::move(c.gcs);
  keep.clear();
  c = Counters{};
  c.gcs = std::move(keep);
}

// Called by each shard's task as it ends: the side arrays are shared, so one shard at a time
// (the lock is taken once per task, and the other tasks keep running meanwhile).
void Back::merge_deferred(Shard& s) {
  if (s.moved.empty() && s.gaps.empty() && s.footprints.empty()) return;
  const std::lock_guard lock(side_mutex_);
  for (const Moved& m : s.moved) a_.objects.add_move(m.id, m.epoch, m.to);
  // A second access of the same epoch (a dump written as several records) then extends the
  // run the first one started.
  for (auto [id, epoch] : s.gaps) mark(s, id, epoch, false);
  for (auto [id, bytes] : s.footprints) a_.objects.set_footprint(id, bytes);
  s.moved.clear();
  s.gaps.clear();
  s.footprints.clear();
}

void Back::note_peak_live() noexcept {
  a_.stats.peak_live_objects = std::max(a_.stats.peak_live_objects, a_.live_objects + serial_.live_objects);
}

void Back::begin_gc_record(const Event& gc_begin) {
  GcRecord r;
  r.epoch = static_cast<std::uint32_t>(gc_begin.x);
  r.kind = static_cast<trace::GcKind>(gc_begin.gc_kind);
  r.bytes_begin = gc_begin.y;
  a_.gcs.push_back(r);
}

// Access bits of the epoch, and of the running GC's record once it has begun.
void Back::count_marked(Counters& c, const Cursor& cur, std::uint64_t bits) {
  c.marked_bits += bits;
  if (cur.in_gc && cur.gcs_seen > 0) c.gc(static_cast<std::uint32_t>(cur.gcs_seen - 1)).marked_bits += bits;
}

void Back::apply(const EventBatch& batch) {
  static const std::function<void(EventBatch*)> kept = [](EventBatch*) {};
  submit(const_cast<EventBatch*>(&batch), kept);  // only read, and the caller keeps it
  drain();
}

void Back::submit(EventBatch* batch, const std::function<void(EventBatch*)>& applied) {
  if (batch->events.empty()) {
    applied(batch);
    return;
  }
  // The header comes before any event, so this changes at most once, with nothing queued.
  if (const unsigned lg = log2_granule(a_.header.granule_bytes); lg != log2_granule_) {
    drain();
    log2_granule_ = lg;
  }
  // A batch runs on all shards at once unless the front found something in it that needs
  // another shard's result before the batch ends (EventBatch::in_order).
  if (!crew_ || shards_.size() == 1 || batch->in_order) {
    drain();
    apply_serial(*batch);
    applied(batch);
    return;
  }
  const bool gc_end = batch->events.back().kind == Event::kGcEnd;
  const std::uint64_t bytes_end = batch->events.back().y;  // read now: a shard may hand the batch back at once
  enqueue(batch, applied);
  if (gc_end) {
    drain();
    end_gc(bytes_end, true);
  }
}

void Back::enqueue(EventBatch* batch, const std::function<void(EventBatch*)>& applied) {
  // The GC records begun in this batch exist before the shards count into them.
  for (std::uint32_t i : batch->gc_begins) begin_gc_record(batch->events[i]);
  if (synced_) {
    for (auto& s : shards_) s->cur = cur_;  // no shard holds a batch: every cursor starts from the back's
    synced_ = false;
  }
  // A slot is free once its batch is done (never waited for with fewer batches than slots).
  while (queued_.load() - done_.load() >= kQueueSlots)
    if (!apply_queued()) std::this_thread::yield();
  const std::uint64_t n = queued_.load();
  Queued& q = queue_[n % kQueueSlots];
  q.batch = batch;
  q.applied = &applied;
  q.shards_left.store(static_cast<std::uint32_t>(shards_.size()));
  queued_.store(n + 1);
  crew_->poke();
}

bool Back::apply_queued() {
  const std::uint64_t queued = queued_.load();
  const auto n = static_cast<unsigned>(shards_.size());
  const unsigned first = first_shard_.fetch_add(1, std::memory_order_relaxed);
  for (unsigned k = 0; k < n; ++k) {
    Shard& s = *shards_[(first + k) & (n - 1)];
    if (s.next.load() >= queued || s.busy.load() || s.busy.exchange(true)) continue;
    const std::uint64_t number = s.next.load();
    if (number >= queued) {  // another thread applied it between the test and the exchange
      s.busy.store(false);
      continue;
    }
    Queued& q = queue_[number % kQueueSlots];
    EventBatch* const batch = q.batch;
    const std::function<void(EventBatch*)>* const applied = q.applied;
    scan(s, *batch);
    merge_deferred(s);
    s.next.store(number + 1);
    s.busy.store(false);
    if (q.shards_left.fetch_sub(1) == 1) {
      (*applied)(batch);
      done_.fetch_add(1);
    }
    crew_->poke();  // this shard's next batch, or the end of the queue, may be what a thread waits for
    return true;
  }
  return false;
}

void Back::drain() {
  if (synced_) return;
  while (done_.load() != queued_.load()) {
    const std::uint32_t seen = crew_->signal();
    if (done_.load() == queued_.load()) break;
    if (!apply_queued()) crew_->wait(seen);
  }
  cur_ = shards_[0]->cur;
  for (auto& s : shards_) merge(s->counters);
  note_peak_live();
  synced_ = true;
}

void Back::apply_serial(const EventBatch& batch) {
  const EventList& ev = batch.events;
  const std::size_t n = ev.size();
  if (shards_.size() == 1) {
    std::size_t places = 0;
    for (const Event& e : ev) places += e.kind == Event::kPlace;
    shards_[0]->map.reserve_more(places);  // no rehash inside the loop: prefetched lines stay valid
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (i + kAhead < n && ev[i + kAhead].kind == Event::kPlace && !cur_.in_gc) shard_of(ev[i + kAhead].x).map.prefetch(ev[i + kAhead].x);
    const Event& e = ev[i];
    switch (e.kind) {
      case Event::kPlace:
        init_object(e);
        if (cur_.in_gc) {
          shard_of(e.x).born.push_back({e.id, e.x, e.y});  // after the GC's moves and frees
        } else {
          place(shard_of(e.x), serial_, e.id, e.x, e.y, cur_.epoch > 0 ? cur_.epoch - 1 : 0, cur_.gcs_seen);
          note_peak_live();
        }
        break;
      case Event::kFree:
      case Event::kMove:
        shard_of(e.x).ops.push_back({e.kind, e.id, e.x, e.y, e.z});
        if (!cur_.in_gc) collect(cur_.epoch, false);  // not produced by the profiler; applied at once
        break;
      case Event::kRange:
      case Event::kFreeRange:
        for (auto& s : shards_) s->ops.push_back({e.kind, e.id, e.x, e.y, e.z});
        if (!cur_.in_gc) collect(cur_.epoch, false);
        break;
      case Event::kGcBegin:
        cur_.in_gc = true;
        begin_gc_record(e);
        cur_.gcs_seen = a_.gcs.size();
        break;
      case Event::kGcEnd:
        end_gc(e.y, false);
        break;
      case Event::kBits: {
        const std::span<const std::pair<std::uint64_t, std::uint64_t>> words(batch.words.data() + e.y, e.z);
        if (shards_.size() == 1 && words.size() >= opt_.parallel_bitmap_words)
          resolve_in_parallel(*shards_[0], serial_, e.x, e.id, words);
        else
          resolve_words(*shards_[e.shard], serial_, cur_, e.x, e.id, words, false);
        break;
      }
      case Event::kResize:
        // The profiler writes a bracket's mutator records after its gc-end, so the object is
        // in the map; a resize of an address nobody holds is counted, not guessed at.
        if (const std::uint32_t id = shard_of(e.x).map.find(e.x); id != kMissing) a_.objects.set_footprint(id, e.y);
        else ++serial_.unknown_resizes;
        break;
      case Event::kStale:
        if (cur_.in_gc) {
          shard_of(e.x).stale.push_back(e.x);
        } else if (const std::uint32_t id = shard_of(e.x).map.find(e.x); id != kMissing) {
          a_.objects.add_flags(id, kReportedStale);
        }
        break;
    }
  }
  merge(serial_);
}

// One shard's share of a batch that runs in parallel (not EventBatch::in_order): what lies in its
// windows, in file order; a closing GC end is left to the caller.
void Back::scan(Shard& s, const EventBatch& batch) {
  const EventList& ev = batch.events;
  const std::span<const std::uint32_t> route = batch.route(s.index);
  std::size_t n = route.size();
  if (n > 0 && ev[route[n - 1]].kind == Event::kGcEnd) --n;
  Cursor& cur = s.cur;
  std::size_t places = 0;
  for (std::size_t j = 0; j < n; ++j) places += ev[route[j]].kind == Event::kPlace;
  s.map.reserve_more(places);
  for (std::size_t j = 0; j < n; ++j) {
    if (j + kAhead < n && !cur.in_gc) {
      const Event& ahead = ev[route[j + kAhead]];
      if (ahead.kind == Event::kPlace) s.map.prefetch(ahead.x);
    }
    const Event& e = ev[route[j]];
    switch (e.kind) {
      case Event::kPlace:
        init_object(e);
        if (cur.in_gc) s.born.push_back({e.id, e.x, e.y});
        else place(s, s.counters, e.id, e.x, e.y, cur.epoch > 0 ? cur.epoch - 1 : 0, cur.gcs_seen);
        break;
      case Event::kFree:
      case Event::kMove:
      case Event::kRange:
      case Event::kFreeRange:
        s.ops.push_back({e.kind, e.id, e.x, e.y, e.z});
        break;
      case Event::kGcBegin:
        cur.in_gc = true;
        ++cur.gcs_seen;
        break;
      case Event::kGcEnd:
        break;  // not reached: only ever the last event
      case Event::kBits: {
        const std::span<const std::pair<std::uint64_t, std::uint64_t>> words(batch.words.data() + e.y, e.z);
        resolve_words(s, s.counters, s.cur, e.x, e.id, words, true);
        break;
      }
      case Event::kResize:
        if (const std::uint32_t id = s.map.find(e.x); id != kMissing) s.footprints.emplace_back(id, e.y);
        else ++s.counters.unknown_resizes;
        break;
      case Event::kStale:
        if (cur.in_gc) s.stale.push_back(e.x);
        else if (const std::uint32_t id = s.map.find(e.x); id != kMissing) a_.objects.add_flags(id, kReportedStale);
        break;
    }
  }
}

// The bits of one dump that lie in shard s's windows (a word across two windows is in the
// dumps of both shards), looked up in its map; with `defer`, new runs are appended later.
void Back::resolve_words(Shard& s, Counters& c, const Cursor& cur, std::uint64_t begin, std::uint32_t epoch,
                         std::span<const std::pair<std::uint64_t, std::uint64_t>> words, bool defer) {
  const unsigned lg = log2_granule_;
  const bool sharded = shards_.size() > 1;
  s.bit_addrs.clear();
  for (auto [idx, word] : words) {
    const std::uint64_t first = begin + ((idx * 64) << lg);
    const bool check = sharded && ((first >> kWindowBits) != ((first + (std::uint64_t{63} << lg)) >> kWindowBits));
    while (word) {
      const unsigned b = static_cast<unsigned>(__builtin_ctzll(word));
      word &= word - 1;
      const std::uint64_t addr = first + (std::uint64_t{b} << lg);
      if (!check || owner(addr) == s.index) s.bit_addrs.push_back(addr);
    }
  }
  const std::size_t n = s.bit_addrs.size();
  count_marked(c, cur, n);
  s.ids.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (i + kAhead < n) s.map.prefetch(s.bit_addrs[i + kAhead]);
    s.ids[i] = s.map.find(s.bit_addrs[i]);
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (i + kAhead < n && s.ids[i + kAhead] != kMissing) a_.objects.prefetch_access(s.ids[i + kAhead]);
    if (s.ids[i] == kMissing) {
      ++c.unresolved_bits;
    } else {
      ++c.resolved_bits;
      mark(s, s.ids[i], epoch, defer);
    }
  }
}

// One shard only (threads == 1), a large dump: resolved with oneTBB. The map is read-only here
// and each object appears at most once per epoch (one bit per object start), so the inline run
// updates touch distinct objects; the rare gap (a new run in the side array) is appended
// afterwards.
void Back::resolve_in_parallel(Shard& s, Counters& c, std::uint64_t begin, std::uint32_t epoch,
                               std::span<const std::pair<std::uint64_t, std::uint64_t>> words) {
  const unsigned lg = log2_granule_;
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
        const std::uint32_t id = s.map.find(begin + ((idx * 64 + b) << lg));
        if (id == kMissing) {
          ++l.unresolved;
        } else {
          ++l.resolved;
          if (!a_.objects.try_extend_access(id, epoch)) l.gaps.push_back(id);
        }
      }
    }
  });
  std::uint64_t bits = 0;
  for (Local& l : locals) {
    c.resolved_bits += l.resolved;
    c.unresolved_bits += l.unresolved;
    bits += l.resolved + l.unresolved;
    for (ObjectId id : l.gaps) a_.objects.start_run(id, epoch);
  }
  count_marked(c, cur_, bits);
}

void Back::end_gc(std::uint64_t bytes_end, bool parallel) {
  collect(cur_.epoch, parallel);
  if (!a_.gcs.empty()) {
    GcRecord& r = a_.gcs.back();
    r.ended = true;
    r.bytes_end = bytes_end;
    r.live_objects_after = a_.live_objects;
    r.live_bytes_after = a_.live_bytes;
  }
  note_memory();
  cur_.in_gc = false;
  ++cur_.epoch;
}

// Applies the running GC's frees and moves (or one outside a GC) as one batch: every source
// leaves the pre-GC heap, then every destination is taken, then allocations made during it.
void Back::collect(std::uint32_t e, bool parallel) {
  if (parallel) run_shards([&](unsigned i) { leave(*shards_[i], shards_[i]->counters, e); });
  else
    for (auto& s : shards_) leave(*s, serial_, e);
  // A range that moved nothing in any shard named no object.
  for (std::size_t j = 0; j < shards_[0]->range_found.size(); ++j) {
    std::uint64_t found = 0;
    for (auto& s : shards_) found += s->range_found[j];
    if (found == 0) ++serial_.unknown_moves;
  }
  if (parallel)
    run_shards([&](unsigned i) {
      arrive(*shards_[i], shards_[i]->counters, e, true);
      merge_deferred(*shards_[i]);
    });
  else
    for (auto& s : shards_) arrive(*s, serial_, e, false);
  for (auto& s : shards_) {
    s->ops.clear();
    for (auto& o : s->out) o.clear();
    s->range_found.clear();
    merge(s->counters);
  }
  merge(serial_);
  note_peak_live();
}

// Pass 1 for one shard: the sources in its windows leave the map (lines prefetched a few ops
// ahead); frees die, moves become relocations in op order. Free ranges come after every move
// and range move of the GC, wherever they stand among them: a range frees only what the GC does
// not move (a copying collector reports its evacuated area as one range).
void Back::leave(Shard& s, Counters& c, std::uint32_t e) {
  const std::size_t n = s.ops.size();
  s.ids.resize(n);
  s.range_out.clear();
  bool free_ranges = false;
  for (std::size_t i = 0; i < n; ++i) {
    if (i + kAhead < n) s.map.prefetch(s.ops[i + kAhead].from);
    if (s.ops[i].kind == Event::kRange) {
      s.ids[i] = kMissing;
      take_range(s, s.ops[i]);
    } else if (s.ops[i].kind == Event::kFreeRange) {
      s.ids[i] = kMissing;
      free_ranges = true;
    } else {
      s.ids[i] = s.map.erase(s.ops[i].from);
    }
  }
  for (std::size_t i = 0; i < n && free_ranges; ++i)
    if (s.ops[i].kind == Event::kFreeRange)
      erase_range(s, s.ops[i].from, s.ops[i].bytes, false, [&](std::uint64_t, ObjectId id) {
        ++c.range_freed;
        kill(c, id, e, cur_.gcs_seen);
      });
  std::size_t range = 0, range_pos = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (i + kAhead < n && s.ids[i + kAhead] != kMissing) a_.objects.prefetch_update(s.ids[i + kAhead]);
    const Op& op = s.ops[i];
    if (op.kind == Event::kFreeRange) continue;  // its objects died above
    if (op.kind == Event::kRange) {
      const std::uint32_t k = s.range_found[range++];
      for (std::size_t j = range_pos; j < range_pos + k; ++j) relocate(s, s.range_out[j]);
      range_pos += k;
      continue;
    }
    if (s.ids[i] == kMissing) ++(op.kind == Event::kFree ? c.unknown_frees : c.unknown_moves);
    else if (op.kind == Event::kFree) kill(c, s.ids[i], e, cur_.gcs_seen);
    else relocate(s, {s.ids[i], op.seq, op.to});
  }
}

// The objects of a range in shard s's windows leave its map, fn(addr, id) for each: probe
// every granule there while that is little against the map's size, else one pass over the
// whole map (AddressMap::erase_if; a copying GC's free range takes nearly all of it). In
// address order if `ordered` (a range move's relocations keep the order of file-order
// application), else in slot order (a free range: each death is counted on its own).
template <class Fn>
void Back::erase_range(Shard& s, std::uint64_t from, std::uint64_t bytes, bool ordered, Fn&& fn) {
  const std::uint64_t end = from + bytes;
  const unsigned lg = log2_granule_;
  const std::uint64_t granules = bytes >> lg;
  // A probe costs several slots' worth of work (a hash, a probe run); the pass about one slot.
  if (granules / shards_.size() <= s.map.capacity() / 8) {
    // A window at a time: its owner is looked up once.
    for (std::uint64_t addr = from; addr < end;) {
      const std::uint64_t window_end = ((addr >> kWindowBits) + 1) << kWindowBits;  // 0 past the top
      if (owner(addr) != s.index) {  // skip to the next window
        if (window_end <= addr) break;
        addr += ((window_end - addr + (std::uint64_t{1} << lg) - 1) >> lg) << lg;
        continue;
      }
      const std::uint64_t stop = window_end <= addr ? end : std::min(end, window_end);
      for (; addr < stop; addr += std::uint64_t{1} << lg)
        if (const std::uint32_t id = s.map.erase(addr); id != kMissing) fn(addr, id);
    }
    return;
  }
  const std::uint64_t off_granule = (std::uint64_t{1} << lg) - 1;
  const auto inside = [&](std::uint64_t addr) { return addr >= from && addr - from < bytes && ((addr - from) & off_granule) == 0; };
  if (!ordered) {
    s.map.erase_if(inside, fn);
    return;
  }
  std::vector<std::pair<std::uint64_t, ObjectId>>& found = s.range_scratch;
  found.clear();
  s.map.erase_if(inside, [&](std::uint64_t addr, std::uint32_t id) { found.emplace_back(addr, id); });
  std::sort(found.begin(), found.end());
  for (auto [addr, id] : found) fn(addr, id);
}

// The part of a range move in shard s's windows, as relocations.
void Back::take_range(Shard& s, const Op& op) {
  const std::uint64_t delta = op.to - op.from;  // modular: also right for moves down
  const std::size_t before = s.range_out.size();
  erase_range(s, op.from, op.bytes, true, [&](std::uint64_t addr, ObjectId id) { s.range_out.push_back({id, op.seq, addr + delta}); });
  s.range_found.push_back(static_cast<std::uint32_t>(s.range_out.size() - before));
}

// Pass 2 for one shard: the relocations landing in its windows, from every shard, in op order
// (a later move onto the same address wins, as in file order); then the GC's allocations and
// its online leak reports there.
//
// The shards' parts are each in op order already, so they are merged pairwise (std::merge
// keeps the earlier part's objects first among equal places: those of one range move, which
// land at distinct addresses), as a stable sort of their concatenation in shard order would.
const std::vector<Back::Relocation>& Back::arrivals(Shard& t) {
  const Shard* only = nullptr;
  std::size_t parts = 0, total = 0;
  for (const auto& s : shards_)
    if (const std::size_t k = s->out[t.index].size(); k > 0) {
      only = s.get();
      ++parts;
      total += k;
    }
  if (parts <= 1) return only ? only->out[t.index] : t.in;  // t.in is empty between GCs
  t.in.clear();
  t.runs.clear();
  for (const auto& s : shards_)
    if (!s->out[t.index].empty()) {
      t.runs.push_back(t.in.size());
      t.in.insert(t.in.end(), s->out[t.index].begin(), s->out[t.index].end());
    }
  t.runs.push_back(total);
  const auto by_seq = [](const Relocation& x, const Relocation& y) { return x.seq < y.seq; };
  t.merged.resize(total);
  while (t.runs.size() > 2) {  // bounds of runs, the last one the end
    std::size_t kept = 0;
    for (std::size_t r = 0; r + 1 < t.runs.size(); r += 2) {
      const auto first = t.in.begin() + static_cast<std::ptrdiff_t>(t.runs[r]);
      const auto mid = t.in.begin() + static_cast<std::ptrdiff_t>(t.runs[r + 1]);
      const auto last = r + 2 < t.runs.size() ? t.in.begin() + static_cast<std::ptrdiff_t>(t.runs[r + 2]) : mid;
      std::merge(first, mid, mid, last, t.merged.begin() + static_cast<std::ptrdiff_t>(t.runs[r]), by_seq);
      t.runs[kept++] = t.runs[r];
    }
    t.runs[kept++] = total;
    t.runs.resize(kept);
    t.in.swap(t.merged);
  }
  t.merged.clear();
  return t.in;
}

void Back::arrive(Shard& t, Counters& c, std::uint32_t e, bool defer) {
  const std::vector<Relocation>& rel = arrivals(t);
  t.map.reserve_more(rel.size() + t.born.size());
  for (std::size_t i = 0; i < rel.size(); ++i) {
    if (i + kAhead < rel.size()) t.map.prefetch(rel[i + kAhead].to);
    const Relocation& r = rel[i];
    if (r.to == 0) {  // a move to address 0 cannot be represented; the object is lost
      ++c.unknown_moves;
      kill(c, r.id, e, cur_.gcs_seen);
      continue;
    }
    const std::uint32_t prev = t.map.put(r.to, r.id);
    if (prev != kMissing) infer_death(c, prev, e, cur_.gcs_seen);
    if (defer) t.moved.push_back({r.id, e, r.to});
    else a_.objects.add_move(r.id, e, r.to);
    if (e < cur_.gcs_seen) ++c.gc(e).moved_objects;
  }
  for (const Born& b : t.born) place(t, c, b.id, b.addr, b.size, e, cur_.gcs_seen);
  t.born.clear();
  for (std::uint64_t addr : t.stale)
    if (const std::uint32_t id = t.map.find(addr); id != kMissing) a_.objects.add_flags(id, kReportedStale);
  t.stale.clear();
  t.in.clear();
}

void Back::note_memory() {
  std::uint64_t now = 0;
  for (const auto& s : shards_) {
    for (const auto& o : s->out) now += o.capacity() * sizeof(Relocation);
    now += s->map.memory_bytes() + (s->ops.capacity()) * sizeof(Op) +
           (s->in.capacity() + s->merged.capacity() + s->range_out.capacity()) * sizeof(Relocation) + s->born.capacity() * sizeof(Born) +
           s->moved.capacity() * sizeof(Moved) + s->ids.capacity() * 4 + s->bit_addrs.capacity() * 8 +
           s->range_scratch.capacity() * sizeof(s->range_scratch[0]);
  }
  peak_ = std::max(peak_, now);
}

bool Back::finish() {
  note_memory();
  if (!cur_.in_gc) return false;
  // The trace stops inside GC e: its bits were dumped, its moves and frees so far are
  // applied, but it never finished.
  collect(cur_.epoch, false);
  cur_.in_gc = false;
  ++cur_.epoch;
  return true;
}

}  // namespace objprof::analysis::internal
