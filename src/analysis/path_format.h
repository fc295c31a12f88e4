// How the online tracker's paths from GC roots are written in the reports (private).
#pragma once

#include "json_writer.h"

#include "objprof/analysis/trace_analysis.h"

#include <string>

namespace objprof::analysis::internal {

// The path with the trace's type names filled in.
RootPath named_path(const TraceAnalysis& a, const trace::PathEvent& p);
// One line: format_path() of a path found, or why none was: "none found (object budget
// exhausted after 1000000 objects)". Either way with the GC that searched.
std::string path_text(const TraceAnalysis& a, const trace::PathEvent& p);
// The search as a JSON object (docs/report.schema.json, "root_path").
void path_json(JsonWriter& j, const TraceAnalysis& a, const trace::PathEvent& p);

}  // namespace objprof::analysis::internal
