// The report as JSON for tools. The document follows docs/report.schema.json ("schema":
// "objprof-report/1"); fields are only ever added within a schema version.
#pragma once

#include "objprof/analysis/report.h"

#include <string>

namespace objprof::analysis {

inline constexpr const char* kReportSchema = "objprof-report/1";

std::string render_json(const Report& report);

}  // namespace objprof::analysis
