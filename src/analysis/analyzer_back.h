// The analyzer's back half (private): applies EventBatches from the front to the address map
// of live objects — placements, the epoch's access bits at pre-GC addresses, a GC's moves and
// frees as one batch at its end, allocations made during a GC after it — and records deaths,
// moves, access runs and per-GC counts in the TraceAnalysis (analyzer.h has the rules).
#pragma once

#include "address_map.h"
#include "event_batch.h"

#include "objprof/analysis/analyzer.h"

#include <unordered_map>
#include <vector>

namespace objprof::analysis::internal {

class Back {
 public:
  Back(TraceAnalysis& a, const AnalyzerOptions& options) : a_(a), opt_(options) {}

  void apply(const EventBatch& batch);
  // The trace ended: applies a GC it stopped inside (returns true then).
  bool finish();
  std::uint32_t epoch() const noexcept { return epoch_; }
  // The back's own memory at its peak (address map and scratch), beside the ChainStore.
  std::uint64_t peak_bytes() const noexcept { return peak_; }

 private:
  struct Op {
    Event::Kind kind;
    std::uint64_t from, to, bytes;
  };
  struct Relocation {
    ObjectId id;
    std::uint64_t to;
  };
  struct Born {
    ObjectId id;
    std::uint64_t addr, size;
  };

  std::uint64_t size_of(ObjectId o) const;
  void kill(ObjectId id, std::uint32_t at);
  void infer_death(ObjectId prev, std::uint32_t at);
  void place(ObjectId id, std::uint64_t addr, std::uint64_t size, std::uint32_t infer_at);
  void resolve_bits(std::uint64_t begin, std::uint32_t epoch, std::span<const std::pair<std::uint64_t, std::uint64_t>> words);
  void take_range(const Op& op);
  void apply_gc(std::uint32_t e);
  void note_memory();

  TraceAnalysis& a_;
  AnalyzerOptions opt_;
  AddressMap map_;
  std::uint32_t epoch_ = 0;
  bool in_gc_ = false;
  unsigned log2_granule_ = 3;
  std::unordered_map<ObjectId, std::uint64_t> big_sizes_;  // sizes the ChainStore marks kBigSize
  std::vector<Op> ops_;                    // the running GC's frees and moves
  std::vector<Born> born_in_gc_;           // allocations made while it runs
  std::vector<std::uint64_t> stale_;       // its online leak reports (post-GC addresses)
  std::vector<Relocation> relocs_;
  std::vector<std::uint32_t> ids_;         // scratch: ids of ops / bits
  std::vector<std::uint64_t> bit_addrs_;   // scratch: addresses of bits
  std::uint64_t peak_ = 0;
};

}  // namespace objprof::analysis::internal
