// The analyzer's front half (private): a trace::Visitor that keeps the definitions (sites,
// types, threads, interned allocation contexts), appends every new object to the ChainStore
// (birth on both clocks, flags), and passes the rest on as EventBatches to the back half
// (analyzer_back.h). It never reads the address map, so it can run a batch ahead of the back
// on another thread; analyze() does exactly that.
#pragma once

#include "event_batch.h"

#include "objprof/analysis/analyzer.h"
#include "objprof/config.h"

#include <array>
#include <functional>
#include <unordered_map>
#include <vector>

namespace objprof::analysis::internal {

class alignas(kCacheLine) Front final : public trace::Visitor {
 public:
  // `handoff` receives each full batch and returns an empty one to continue with.
  using Handoff = std::function<EventBatch*(EventBatch*)>;
  // `shards`: the back's (each event that names an address carries its shard).
  Front(TraceAnalysis& a, const AnalyzerOptions& options, EventBatch* first, Handoff handoff, unsigned shards = 1);

  void set_input_bytes(std::uint64_t bytes) noexcept { input_bytes_ = bytes; }
  // Hands over the last, partial batch (the handoff's return value is then ignored).
  void finish();
  bool too_many_objects() const noexcept { return too_many_objects_; }
  std::uint64_t clock() const noexcept { return clock_; }
  // What a batch's routes take (EventBatch::set_shards).
  std::size_t route_bytes_per_batch() const noexcept { return EventBatch::route_bytes(shards_); }

  void header(const trace::Header& h) override;
  void type_def(const trace::TypeDef& t) override;
  void site_def(const trace::SiteDef& s) override;
  void thread_def(const trace::ThreadDef& t) override;
  void thread_end(std::uint32_t thread) override;
  void alloc(const trace::AllocEvent& a) override;
  void move(const trace::MoveEvent& m) override;
  void free(const trace::FreeEvent& f) override;
  void resize(const trace::ResizeEvent& r) override;
  void gc_begin(const trace::GcEvent& g) override;
  void gc_end(const trace::GcEvent& g) override;
  void bitmap_words(std::uint32_t space, std::uint64_t epoch,
                    std::span<const std::pair<std::uint64_t, std::uint64_t>> index_word) override;
  void stale(const trace::StaleEvent& s) override;
  void path(const trace::PathEvent& p) override;
  void end(std::uint64_t epoch, std::uint64_t bytes_allocated) override;
  // Progress is reported per chunk, by the bytes of file read (records are of varying size).
  void chunk_end(std::uint64_t bytes) override;

 private:
  // Hands the batch over and continues with the one the handoff returns. Out of line, so that
  // the emits (one per record) inline into the record's visitor without its frame.
  OBJPROF_NOINLINE void next_batch() {
    batch_ = handoff_(batch_);
    prepare_batch();
  }
  void prepare_batch() {
    if (batch_->shards() != (shards_ > 1 ? shards_ : 0)) batch_->set_shards(shards_);
  }
  // An event every shard sees.
  Event& emit(Event::Kind kind) {
    if (batch_->full()) next_batch();
    if (shards_ > 1) {
      const auto index = static_cast<std::uint32_t>(batch_->events.size());
      for (unsigned s = 0; s < shards_; ++s) batch_->route_to(s, index);
    }
    return batch_->events.append() = Event{kind};
  }
  // An event for one shard.
  OBJPROF_ALWAYS_INLINE Event& emit_to(Event::Kind kind, unsigned shard) {
    if (batch_->full()) next_batch();
    if (shards_ > 1) batch_->route_to(shard, static_cast<std::uint32_t>(batch_->events.size()));
    Event& e = batch_->events.append() = Event{kind};
    e.shard = static_cast<std::uint8_t>(shard);
    return e;
  }
  // An event about one address, for its shard.
  OBJPROF_ALWAYS_INLINE Event& emit_at(Event::Kind kind, std::uint64_t addr) {
    Event& e = emit_to(kind, shards_ > 1 ? shard_cache_(addr, shards_) : 0);
    e.x = addr;
    return e;
  }
  std::uint32_t site_idx(std::uint32_t id);
  std::uint32_t type_idx(std::uint32_t id);
  std::uint32_t thread_idx(std::uint32_t id);
  // The bytes a thread allocated per epoch. A thread's chunks come in epoch order; an earlier
  // epoch (not written by objprof) joins the latest. Inline: every allocation adds to it.
  static void add_progress(Thread& th, std::uint32_t epoch, std::uint64_t bytes) {
    auto& p = th.progress;
    if (!p.empty() && p.back().first >= epoch) [[likely]] p.back().second += bytes;
    else p.push_back({epoch, p.empty() ? bytes : p.back().second + bytes});
  }

  // Inline: context() hashes the triple of every allocation whose context is not the previous one.
  struct TripleHash {
    std::size_t operator()(const std::array<std::uint32_t, 3>& k) const noexcept {
      const std::uint64_t h = (std::uint64_t{k[0]} * 0x9E37'79B9'7F4A'7C15ull) ^ (std::uint64_t{k[1]} * 0xC2B2'AE3D'27D4'EB4Full) ^
                              (std::uint64_t{k[2]} * 0x1656'67B1'9E37'79F9ull);
      return static_cast<std::size_t>(h ^ (h >> 29));
    }
  };
  struct CacheEntry {
    std::uint32_t site = 0, type = 0, thread = 0, ctx = kNoIndex;
  };
  // The context of (site, type, thread): the previous allocation's (a run of allocations at one
  // site is common, and three compares cost less than the hash), else from a direct-mapped
  // cache of recent triples (almost every allocation repeats one; the lookup is inlined into
  // alloc), else interned.
  std::uint32_t context(std::uint32_t site, std::uint32_t type, std::uint32_t thread) {
    if (last_ctx_.site == site && last_ctx_.type == type && last_ctx_.thread == thread && last_ctx_.ctx != kNoIndex) [[likely]]
      return last_ctx_.ctx;
    CacheEntry& c = ctx_cache_[TripleHash{}({site, type, thread}) & (kContextCacheSize - 1)];
    if (!(c.ctx != kNoIndex && c.site == site && c.type == type && c.thread == thread)) [[unlikely]]
      context_slow(c, site, type, thread);
    last_ctx_ = c;
    return c.ctx;
  }
  std::uint32_t context_slow(CacheEntry& c, std::uint32_t site, std::uint32_t type, std::uint32_t thread);
  struct SpaceBase {
    std::uint32_t id;
    std::uint64_t begin;
  };

  TraceAnalysis& a_;
  AnalyzerOptions opt_;
  EventBatch* batch_;
  Handoff handoff_;
  unsigned shards_;
  ShardCache shard_cache_;
  std::uint32_t epoch_ = 0;
  std::uint32_t op_seq_ = 0;  // frees and moves since the running GC began
  bool in_gc_ = false;
  bool too_many_objects_ = false;
  std::uint64_t clock_ = 0;  // bytes allocated, as far as the trace has told
  std::vector<SpaceBase> spaces_;
  std::vector<std::vector<std::pair<std::uint64_t, std::uint64_t>>> shard_words_;  // scratch
  std::unordered_map<std::array<std::uint32_t, 3>, std::uint32_t, TripleHash> ctx_index_;
  static constexpr std::size_t kContextCacheSize = 4096;  // a power of two
  std::vector<CacheEntry> ctx_cache_ = std::vector<CacheEntry>(kContextCacheSize);
  CacheEntry last_ctx_;
  std::uint64_t input_bytes_ = 0, processed_ = 0, next_progress_ = 0;
};

}  // namespace objprof::analysis::internal
