// The offline analyzer: reads a trace and builds every object's Address-Chain.
//
// How the records of one epoch e are applied (docs/analyzer.md has the full account):
//   1. allocations of epoch e create objects at their addresses (birth on both clocks);
//   2. gc-begin(e), then the epoch's access bitmap: each marked granule is resolved to the
//      object that occupied it during epoch e — at its pre-GC address, because the GC's moves
//      and deaths have not been applied yet (the paper: "process access events before
//      calculating object movement and death information in this GC cycle");
//   3. the GC's moves and frees are collected and applied together at gc-end(e): first every
//      source address is looked up in the pre-GC heap, then every destination is written, so a
//      compacting GC that moves B onto A's old address in the same cycle is read correctly;
//   4. allocations made while the GC ran (a concurrent collector) are applied after its moves
//      and frees: that GC never moves or frees them, and they may reuse an address it freed.
// An address taken by a new object while the previous occupant has no free record means the
// occupant died unreported (a runtime that leaves deaths implicit): its death is inferred at
// the last GC before the reuse, and counted.
//
// Memory: the ChainStore (under 64 bytes per object) plus the address map of live objects.
// Parallelism (AnalyzerOptions::workers): analyze() reads, decodes, keeps the definitions and
// numbers new objects on one thread, and applies the rest (placements, GCs, access bits) a
// few batches behind in shards, each owning the address map of a share of the heap (64 KiB
// windows hashed to shards), whose tasks all `workers` threads take. The result is that of
// applying every record in file order, whatever the number of workers.
#pragma once

#include "objprof/analysis/trace_analysis.h"
#include "objprof/result.h"
#include "objprof/trace_reader.h"

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>

namespace objprof::analysis {

struct AnalyzerOptions {
  // Called now and then with the fraction of the input read (0..1); the CLI draws its
  // progress bar with it. Called on the reading thread.
  std::function<void(double)> progress;
  // Threads that analyze() and analyze_file() run in all. 1: everything on the calling
  // thread. N > 1: the reader and the front on a thread of their own, the back's 4 x N shards
  // as tasks taken by the calling thread, N - 2 helpers and the reader whenever it hands a
  // batch over. 0: one per hardware thread. The result does not depend on it; the analyzer's
  // own memory grows by a fixed ~1.3 MiB.
  unsigned workers = 0;
  // Analyzer only (the incremental form, on the calling thread): bitmap dumps with at least
  // this many marked words are resolved in parallel with oneTBB.
  std::size_t parallel_bitmap_words = 4096;
};

// Incremental form, on the calling thread: feed visitor() to trace::read / read_file yourself
// (e.g. to also run other visitors), then take() the result. Same result as analyze().
class Analyzer {
 public:
  explicit Analyzer(AnalyzerOptions options = {});
  ~Analyzer();
  Analyzer(const Analyzer&) = delete;
  Analyzer& operator=(const Analyzer&) = delete;

  // For progress reports: the size of the input in bytes.
  void set_input_bytes(std::uint64_t bytes) noexcept;
  // What the trace reader feeds; valid as long as this Analyzer.
  trace::Visitor& visitor() noexcept;

  // Finishes the analysis with the reader's summary (truncation, warnings) and hands it over;
  // call it once. Errors: more than 2^32 - 2 objects (kUnsupported).
  Result<TraceAnalysis> take(const trace::ReadSummary& summary);

  struct State;

 private:
  std::unique_ptr<State> s_;
};

// Reads and analyzes a whole trace. A corrupt trace gives the reader's error; a truncated
// one is analyzed up to its last whole chunk, with the reader's warning in `warnings`.
Result<TraceAnalysis> analyze(std::span<const std::byte> trace, const AnalyzerOptions& options = {});
Result<TraceAnalysis> analyze_file(const std::string& path, const AnalyzerOptions& options = {});

}  // namespace objprof::analysis
