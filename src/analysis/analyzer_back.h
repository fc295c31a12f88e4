// The analyzer's back half (private): applies EventBatches from the front to the address map
// of live objects — placements, the epoch's access bits at pre-GC addresses, a GC's moves and
// frees as one batch at its end, allocations made during a GC after it — and records deaths,
// moves, access runs and per-GC counts in the TraceAnalysis (analyzer.h has the rules).
//
// Sharded by address so that it scales with threads: the heap is cut into 64 KiB windows, each
// window belongs to one of the shards (a hash of its number), each shard owns the address map
// of its windows, and the front tags every event with its shard (EventBatch::route). A batch
// whose only synchronisation point is a GC end at its last event (the front cuts batches
// there, so this is nearly every batch) is queued (submit), and each shard applies its own
// events of each queued batch in file order, as a task that any thread of the Crew (crew.h)
// may take as background work once that shard has finished the batch before: no barrier
// between batches. At the GC end the queue is drained, then every shard first takes its
// sources out of the pre-GC heap, then, after all have, places the destinations that land in
// its windows, in the GC's record order (two phases of the crew). Per-object updates touch
// only objects the shard holds; the few that append to shared side arrays (a move, a new run
// of access epochs, a resize) are made by each shard's task as it ends, one task at a time,
// and the counters are merged where the queue is drained. Anything else (frees outside a GC,
// bits of two epochs in one batch: EventBatch::in_order) is applied in file order on the
// calling thread, over the same shards, after draining the queue. The result is the same for
// every shard count: a test compares them.
#pragma once

#include "address_map.h"
#include "crew.h"
#include "event_batch.h"

#include "objprof/analysis/analyzer.h"
#include "objprof/config.h"

#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace objprof::analysis::internal {

class alignas(kCacheLine) Back {
 public:
  // shard_count(shards) address-map shards. A batch that can is applied on all of them at once
  // by the crew's threads (without a crew, one after the other on the caller).
  Back(TraceAnalysis& a, const AnalyzerOptions& options, unsigned shards = 1, Crew* crew = nullptr);
  ~Back();

  // Applies a batch before it returns.
  void apply(const EventBatch& batch);
  // Pipelined application (a crew and several shards). submit() queues a batch that can run
  // on all shards at once, and each shard takes its next queued batch as soon as it has
  // applied the one before, whatever the other shards are doing: no thread waits for the
  // others at the end of a batch. The queue is drained (every queued batch applied, the
  // shards' counts merged) before anything that needs every shard's result: a batch that
  // must run in file order (then applied on the calling thread), the GC end that closes a
  // batch, and the end of the trace. `applied` is called once for each submitted batch, on
  // whichever thread finishes it, once the back no longer reads it; it must outlive the
  // queue. Calling thread only, as apply().
  void submit(EventBatch* batch, const std::function<void(EventBatch*)>& applied);
  // Applies every queued batch (working on them on the calling thread too).
  void drain();
  // Batches queued at once, at most (more than the analyzer has: submit() never waits for a slot).
  static constexpr std::size_t kQueueSlots = 16;
  // The trace ended: applies a GC it stopped inside (returns true then).
  bool finish();
  std::uint32_t epoch() const noexcept { return cur_.epoch; }
  // The back's own memory at its peak (address maps and scratch), beside the ChainStore.
  std::uint64_t peak_bytes() const noexcept { return peak_; }

 private:
  struct Op {
    Event::Kind kind;
    std::uint32_t seq;  // its place among the running GC's frees and moves (Event::id)
    std::uint64_t from, to, bytes;
  };
  struct Relocation {
    ObjectId id;
    std::uint32_t seq;
    std::uint64_t to;
  };
  struct Born {
    ObjectId id;
    std::uint64_t addr, size;
  };
  struct Moved {
    ObjectId id;
    std::uint32_t epoch;
    std::uint64_t to;
  };
  struct GcDelta {
    std::uint32_t epoch;
    std::uint64_t freed_objects = 0, freed_bytes = 0, moved_objects = 0, marked_bits = 0;
  };
  // What a shard changed in the TraceAnalysis's totals, merged after it ran (deltas, modular).
  struct Counters {
    std::uint64_t live_objects = 0, live_bytes = 0;
    std::uint64_t inferred_deaths = 0, unknown_frees = 0, unknown_moves = 0, unknown_resizes = 0, range_freed = 0;
    std::uint64_t marked_bits = 0, resolved_bits = 0, unresolved_bits = 0;
    std::vector<GcDelta> gcs;
    GcDelta& gc(std::uint32_t epoch);
  };
  // Where a scan of the batches stands: the same for every shard between batches.
  struct Cursor {
    bool in_gc = false;
    std::uint32_t epoch = 0;
    std::size_t gcs_seen = 0;  // GC records begun so far (a death counts in its GC's record only then)
  };
  struct Shard {
    Shard(unsigned i, unsigned shards) : index(i), map(shard_group_log2(shards)), out(shards) {}
    unsigned index = 0;
    // The queue's next batch for this shard (its number), and whether a thread holds the shard.
    std::atomic<std::uint64_t> next{0};
    std::atomic<bool> busy{false};
    AddressMap map;
    Counters counters;
    Cursor cur;
    std::vector<Op> ops;                   // the running GC's frees and moves whose source is here (every range)
    std::vector<Born> born;                // allocations made while it runs, placed here
    std::vector<std::uint64_t> stale;      // its online leak reports (post-GC addresses) here
    // Objects leaving this shard's windows, by the shard whose windows they land in, each in
    // op order: the destination's shard is found once per object, by its source's shard.
    std::vector<std::vector<Relocation>> out;
    std::vector<Relocation> in, merged;    // scratch: objects arriving from several shards, merged into op order
    std::vector<std::size_t> runs;         // scratch: where each source shard's part of `in` starts
    ShardCache destinations;               // its relocations' shards (a copy's destinations come in runs)
    std::vector<std::uint32_t> range_found;  // per range op of the running GC: objects found here
    // Deferred while shards run in parallel (side arrays of the ChainStore are shared).
    std::vector<Moved> moved;
    std::vector<std::pair<ObjectId, std::uint32_t>> gaps;  // start_run
    std::vector<std::pair<ObjectId, std::uint64_t>> footprints;
    // Scratch.
    std::vector<std::uint32_t> ids;
    std::vector<std::uint64_t> bit_addrs;
    std::vector<Relocation> range_out;
    std::vector<std::pair<std::uint64_t, ObjectId>> range_scratch;  // a range move's objects, sorted by address
  };

  unsigned owner(std::uint64_t addr) const noexcept { return internal::shard_of(addr, static_cast<unsigned>(shards_.size())); }
  void run_shards(const std::function<void(unsigned)>& job);
  Shard& shard_of(std::uint64_t addr) noexcept { return *shards_[owner(addr)]; }

  void apply_serial(const EventBatch& batch);
  void enqueue(EventBatch* batch, const std::function<void(EventBatch*)>& applied);
  // One shard's next queued batch, on the calling thread (the crew's background work): false
  // if every shard with a queued batch is held by another thread.
  bool apply_queued();
  void scan(Shard& s, const EventBatch& batch);
  void end_gc(std::uint64_t bytes_end, bool parallel);
  void collect(std::uint32_t e, bool parallel);
  void leave(Shard& s, Counters& c, std::uint32_t e);
  void arrive(Shard& s, Counters& c, std::uint32_t e, bool defer);
  const std::vector<Relocation>& arrivals(Shard& t);
  void relocate(Shard& s, const Relocation& r) {
    s.out[shards_.size() > 1 ? s.destinations(r.to, static_cast<unsigned>(shards_.size())) : 0].push_back(r);
  }
  void take_range(Shard& s, const Op& op);
  // Removes from shard s's map every object that starts in [from, from + bytes) and lies in its
  // windows, calling fn(addr, id) for each: in address order if `ordered`.
  template <class Fn>
  void erase_range(Shard& s, std::uint64_t from, std::uint64_t bytes, bool ordered, Fn&& fn);
  void resolve_words(Shard& s, Counters& c, const Cursor& cur, std::uint64_t begin, std::uint32_t epoch,
                     std::span<const std::pair<std::uint64_t, std::uint64_t>> words, bool defer);
  void resolve_in_parallel(Shard& s, Counters& c, std::uint64_t begin, std::uint32_t epoch,
                           std::span<const std::pair<std::uint64_t, std::uint64_t>> words);
  void mark(Shard& s, ObjectId id, std::uint32_t epoch, bool defer);
  void init_object(const Event& place) noexcept;
  void begin_gc_record(const Event& gc_begin);
  void count_marked(Counters& c, const Cursor& cur, std::uint64_t bits);

  std::uint64_t size_of(ObjectId o) const;
  void kill(Counters& c, ObjectId id, std::uint32_t at, std::size_t gcs_seen);
  void infer_death(Counters& c, ObjectId prev, std::uint32_t at, std::size_t gcs_seen);
  void place(Shard& s, Counters& c, ObjectId id, std::uint64_t addr, std::uint64_t size, std::uint32_t infer_at, std::size_t gcs_seen);
  void merge(Counters& c);
  void merge_deferred(Shard& s);
  void note_peak_live() noexcept;
  void note_memory();

  static constexpr unsigned kWindowBits = kShardWindowBits;

  TraceAnalysis& a_;
  AnalyzerOptions opt_;
  std::vector<std::unique_ptr<Shard>> shards_;
  Crew* crew_;
  Cursor cur_;
  Counters serial_;  // the calling thread's counters when applying in file order
  unsigned log2_granule_ = 3;
  mutable std::mutex big_mutex_;
  std::mutex side_mutex_;  // the ChainStore's side arrays, appended to by shards' tasks
  std::unordered_map<ObjectId, std::uint64_t> big_sizes_;  // sizes the ChainStore marks kBigSize
  std::uint64_t peak_ = 0;

  // The queue of submitted batches, by number (modulo its size). `queued_` batches were
  // submitted, `done_` were applied by every shard. Until the queue is drained, the shards'
  // cursors and counts run ahead of the back's (`synced_` false).
  struct Queued {
    EventBatch* batch = nullptr;
    const std::function<void(EventBatch*)>* applied = nullptr;
    std::atomic<std::uint32_t> shards_left{0};
  };
  std::array<Queued, kQueueSlots> queue_;
  std::atomic<std::uint64_t> queued_{0}, done_{0};
  std::atomic<unsigned> first_shard_{0};  // where the next apply_queued looks first: threads spread out
  bool synced_ = true;
  const std::function<bool()> background_ = [this] { return apply_queued(); };
};

}  // namespace objprof::analysis::internal
