// The analyzer's front half (private): a trace::Visitor that keeps the definitions (sites,
// types, threads, interned allocation contexts), appends every new object to the ChainStore
// (birth on both clocks, flags), and passes the rest on as EventBatches to the back half
// (analyzer_back.h). It never reads the address map, so it can run a batch ahead of the back
// on another thread; analyze() does exactly that.
#pragma once

#include "event_batch.h"

#include "objprof/analysis/analyzer.h"

#include <array>
#include <functional>
#include <unordered_map>
#include <vector>

namespace objprof::analysis::internal {

class Front final : public trace::Visitor {
 public:
  // `handoff` receives each full batch and returns an empty one to continue with.
  using Handoff = std::function<EventBatch*(EventBatch*)>;
  Front(TraceAnalysis& a, const AnalyzerOptions& options, EventBatch* first, Handoff handoff);

  void set_input_bytes(std::uint64_t bytes) noexcept { input_bytes_ = bytes; }
  // Hands over the last, partial batch (the handoff's return value is then ignored).
  void finish();
  bool too_many_objects() const noexcept { return too_many_objects_; }
  std::uint64_t clock() const noexcept { return clock_; }

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

 private:
  Event& emit(Event::Kind kind) {
    if (batch_->full()) batch_ = handoff_(batch_);
    batch_->events.push_back(Event{kind});
    return batch_->events.back();
  }
  std::uint32_t site_idx(std::uint32_t id);
  std::uint32_t type_idx(std::uint32_t id);
  std::uint32_t thread_idx(std::uint32_t id);
  std::uint32_t context(std::uint32_t site, std::uint32_t type, std::uint32_t thread);
  static void add_progress(Thread& th, std::uint32_t epoch, std::uint64_t bytes);
  void advance(std::uint64_t bytes);

  struct TripleHash {
    std::size_t operator()(const std::array<std::uint32_t, 3>& k) const noexcept;
  };
  struct CacheEntry {
    std::uint32_t site = 0, type = 0, thread = 0, ctx = kNoIndex;
  };
  struct SpaceBase {
    std::uint32_t id;
    std::uint64_t begin;
  };

  TraceAnalysis& a_;
  AnalyzerOptions opt_;
  EventBatch* batch_;
  Handoff handoff_;
  std::uint32_t epoch_ = 0;
  bool in_gc_ = false;
  bool too_many_objects_ = false;
  std::uint64_t clock_ = 0;  // bytes allocated, as far as the trace has told
  std::vector<SpaceBase> spaces_;
  std::unordered_map<std::array<std::uint32_t, 3>, std::uint32_t, TripleHash> ctx_index_;
  std::vector<CacheEntry> ctx_cache_ = std::vector<CacheEntry>(4096);  // almost every alloc repeats a recent triple
  std::uint64_t input_bytes_ = 0, processed_ = 0, next_progress_ = 0;
};

}  // namespace objprof::analysis::internal
