// How one Address-Chain is written in the reports (private).
#pragma once

#include "json_writer.h"

#include "objprof/analysis/chain_store.h"
#include "objprof/analysis/object_metrics.h"
#include "objprof/analysis/trace_analysis.h"

#include <string>

namespace objprof::analysis::internal {

// The paper's notation: <(site, T_death|alive), (T0, Addr0), (T1, Addr1), ...> accessed: 0-3,7
// Chains longer than max_placements show their first and last placements.
std::string chain_text(const TraceAnalysis& a, const Chain& c, std::size_t max_placements = 12);
// "0-3,7,9-12" ("never" for none).
std::string runs_text(const std::vector<EpochRun>& runs);
// The chain as a JSON object (docs/report.schema.json, "chain").
void chain_json(JsonWriter& j, const TraceAnalysis& a, const Chain& c, const ObjectMetrics& m);
// A GC's fields (docs/report.schema.json, "gc"), into the object the caller opened: the report's
// `gcs` entries and the Perfetto export's GC slices carry the same names.
void gc_fields_json(JsonWriter& j, const GcRecord& g);

}  // namespace objprof::analysis::internal
