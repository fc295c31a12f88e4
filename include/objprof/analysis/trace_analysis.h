// TraceAnalysis: everything the offline analyzer learned from one trace — the definitions
// (sites, types, threads), one record per GC, and every object's Address-Chain (ChainStore).
// Every report view (leaks, tables, cohorts, replay, ...) is computed from this.
//
// Time: two clocks, as in the trace (docs/trace-format.md). Epoch e runs from gc-end(e-1) to
// gc-begin(e); the GC "of epoch e" ends it. Bytes allocated is the thesis' clock.
#pragma once

#include "objprof/analysis/chain_store.h"
#include "objprof/trace_reader.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace objprof::analysis {

struct Site {
  std::uint32_t id = 0;
  std::uint64_t pc = 0;
  std::uint32_t bytecode_offset = 0;
  std::string method;
  bool defined = false;  // false: used by an alloc record but never defined in the trace
};

struct Type {
  std::uint32_t id = 0;
  std::uint64_t instance_size = 0;
  bool is_array = false;
  std::string name;
  bool defined = false;
};

struct Thread {
  std::uint32_t id = 0;
  std::string name;
  bool defined = false;
  std::uint32_t attach_epoch = 0;       // epoch of its thread record (0 if never defined)
  std::uint64_t attach_bytes = 0;
  std::uint32_t end_epoch = kNoEpoch;   // epoch of its thread-end record; kNoEpoch: still running
  std::uint64_t end_bytes = 0;
  // Its progress clock (staleness.h): (epoch, bytes it allocated by the end of that epoch) for
  // each epoch in which it allocated, and the most it allocated in one epoch before the last.
  std::vector<std::pair<std::uint32_t, std::uint64_t>> progress;
  std::uint64_t busiest_epoch_bytes = 0;
  // Bytes it allocated by the end of `epoch`.
  std::uint64_t bytes_by(std::uint32_t epoch) const noexcept {
    auto it = std::upper_bound(progress.begin(), progress.end(), epoch,
                               [](std::uint32_t e, const std::pair<std::uint32_t, std::uint64_t>& p) { return e < p.first; });
    return it == progress.begin() ? 0 : std::prev(it)->second;
  }
};

// Interned (site, type, thread) of an allocation: objects store one 4-byte index.
struct AllocContext {
  std::uint32_t site = 0, type = 0, thread = 0;  // indexes into sites / types / threads
};

struct GcRecord {
  std::uint32_t epoch = 0;
  trace::GcKind kind = trace::GcKind::kFull;
  std::uint64_t bytes_begin = 0;  // bytes allocated when it began (the clock of deaths in it)
  std::uint64_t bytes_end = 0;
  bool ended = false;             // false: the trace stops inside this GC
  std::uint64_t marked_bits = 0;  // access bits of the epoch it ended
  std::uint64_t freed_objects = 0, freed_bytes = 0, moved_objects = 0;
  std::uint64_t live_objects_after = 0, live_bytes_after = 0;
};

// Counters about the trace and about records the analyzer could not attribute.
struct AnalysisStats {
  std::uint64_t chunks = 0, records = 0, trace_bytes = 0;
  std::uint64_t allocs = 0, moves = 0, move_ranges = 0, frees = 0;
  std::uint64_t free_ranges = 0;       // free-range records (trace version 4)
  std::uint64_t range_freed = 0;       // objects that died in them
  std::uint64_t marked_bits = 0;       // access bits in all bitmap dumps
  std::uint64_t resolved_bits = 0;     // bits that named an object
  std::uint64_t unresolved_bits = 0;   // bits at an address no object occupied then
  std::uint64_t unknown_frees = 0;     // frees of an address no object occupied
  std::uint64_t unknown_moves = 0;
  std::uint64_t resizes = 0;           // footprint changes (trace version 2)
  std::uint64_t unknown_resizes = 0;   // resizes of an address no object occupied
  std::uint64_t inferred_deaths = 0;   // deaths deduced from address reuse (no free record)
  std::uint64_t allocs_during_gc = 0;
  std::uint64_t stale_records = 0;     // online leak reports in the trace
  std::uint64_t path_records = 0;      // online searches for paths from roots (trace version 3)
  std::uint64_t peak_live_objects = 0;
  // Object events the analyzer processed: allocations, moves, frees and access bits (each
  // bit is one access event, as in the paper). The unit of the throughput target.
  std::uint64_t events() const noexcept { return allocs + moves + move_ranges + frees + free_ranges + marked_bits; }
};

struct TraceAnalysis {
  trace::Header header;
  std::vector<Site> sites;
  std::vector<Type> types;
  std::vector<Thread> threads;
  std::vector<AllocContext> contexts;
  std::vector<GcRecord> gcs;  // gcs[e] is the GC of epoch e
  ChainStore objects;

  // The epoch the trace ended in (the end record's, or the epoch reached when it stopped) and
  // the bytes allocated by then. Access bits exist for epochs 0 .. end_epoch - 1 only: the
  // last epoch's bits are harvested by a GC that never came.
  std::uint32_t end_epoch = 0;
  std::uint64_t end_bytes = 0;
  bool complete = false;   // the trace has its end record
  bool truncated = false;  // the file ended inside a chunk
  std::vector<std::string> warnings;
  AnalysisStats stats;
  std::uint64_t live_objects = 0, live_bytes = 0;  // at the end
  std::uint64_t total_bytes = 0;                   // allocated, sum of object sizes
  std::uint64_t peak_memory_bytes = 0;             // the analyzer's own data at its peak
  // For the staleness rule (staleness.h), over the epochs before end_epoch: the program's most
  // bytes allocated in one epoch, and the latest full (not minor) GC (kNoEpoch: none).
  std::uint64_t busiest_epoch_bytes = 0;
  std::uint32_t last_full_gc = kNoEpoch;

  std::unordered_map<std::uint32_t, std::uint32_t> site_index, type_index, thread_index;  // id -> index
  // The online tracker's searches for paths from GC roots to stale objects, in file order.
  std::vector<trace::PathEvent> paths;

  // Bytes-allocated clock at the start of GC `epoch` (deaths in it happen at this time); the
  // end of the trace for epochs past the last GC.
  std::uint64_t gc_clock(std::uint32_t epoch) const noexcept {
    return epoch < gcs.size() ? gcs[epoch].bytes_begin : end_bytes;
  }
  // Clock at the end of GC `epoch` (the start of epoch + 1).
  std::uint64_t gc_end_clock(std::uint32_t epoch) const noexcept {
    return epoch < gcs.size() && gcs[epoch].ended ? gcs[epoch].bytes_end : end_bytes;
  }
  const Site& site_of(ObjectId o) const { return sites[contexts[objects.context(o)].site]; }
  const Type& type_of(ObjectId o) const { return types[contexts[objects.context(o)].type]; }
  const Thread& thread_of(ObjectId o) const { return threads[contexts[objects.context(o)].thread]; }
};

// "Main.run@14" (method and bytecode offset), or "site#7" for an undefined site.
std::string site_label(const Site& s);

}  // namespace objprof::analysis
