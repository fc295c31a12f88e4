// Heap replay (the paper's Fig. 7): allocation and collection in an address window over time.
// Every stay of an object at an address inside the window is a segment [t_from, t_to) on the
// bytes-allocated clock: drawn black while the object lives there, then gray for one epoch
// after the GC that freed it. One object's whole path through its moves can be followed.
#pragma once

#include "objprof/analysis/chain_store.h"
#include "objprof/analysis/trace_analysis.h"
#include "objprof/result.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace objprof::analysis {

struct ReplayWindow {
  std::uint64_t begin = 0, bytes = 0;
};

struct ReplayOptions {
  std::optional<ReplayWindow> window;  // default: around the follow object, else the 16 KiB where most objects were born
  std::optional<ObjectId> follow;      // draw this object's path through its moves
  std::size_t max_segments = 100000;   // more are thinned evenly over time
};

struct ReplaySegment {
  ObjectId id = 0;
  std::uint64_t addr = 0, size = 0;
  std::uint64_t t_from = 0, t_to = 0;  // bytes clock
  enum class End : std::uint8_t { kAlive, kMoved, kDied } end = End::kAlive;
  std::uint64_t t_collected_to = 0;    // kDied: the gray band lasts until here (the next GC)
};

struct ReplayStep {  // one placement of the followed object, in time
  std::uint64_t t = 0, addr = 0;
};

struct HeapReplay {
  ReplayWindow window;
  std::uint64_t t_end = 0;
  std::vector<std::uint64_t> gc_clocks;  // when each GC began
  std::vector<ReplaySegment> segments;   // by t_from
  std::uint64_t segments_total = 0;      // before thinning to max_segments
  std::optional<ObjectId> follow;
  std::vector<ReplayStep> path;          // the followed object's placements, then its death/end
  std::uint64_t follow_size = 0;
};

Result<HeapReplay> heap_replay(const TraceAnalysis& a, const ReplayOptions& options);

// A self-contained SVG picture of the replay.
std::string replay_svg(const TraceAnalysis& a, const HeapReplay& replay);

// Parses "ADDR:BYTES": ADDR in hex (0x...) or decimal, BYTES with optional K/M/G.
Result<ReplayWindow> parse_replay_window(const std::string& text);

}  // namespace objprof::analysis
