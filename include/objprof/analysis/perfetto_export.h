// Export to the Chrome trace-event JSON format ("traceEvents"), which the Perfetto UI
// (ui.perfetto.dev) and chrome://tracing open. A trace has no wall clock, so the time axis is
// the bytes-allocated clock: 1 µs of trace time = 1 KiB allocated. Tracks:
//   - "GC": one slice per collection (kind, freed, moved, live after, access bits);
//   - counters: the live heap (bytes, objects) before and after every GC, and the live bytes
//     of the top allocation sites at every Timeline sample;
//   - one track per mutator thread, a slice from its attach to its end.
#pragma once

#include "objprof/analysis/trace_analysis.h"

#include <string>

namespace objprof::analysis {

struct PerfettoOptions {
  std::string trace_name;
  std::size_t top_sites = 8;      // sites with a live-bytes counter (by allocated bytes)
  std::size_t max_samples = 1000;
};

std::string render_perfetto(const TraceAnalysis& a, const PerfettoOptions& options = {});

}  // namespace objprof::analysis
