// The report as one self-contained HTML page: inline CSS and inline SVG charts (cohort stack,
// object sizes, lifetime buckets, heap volume by thread, heap replay), no script, no external
// resource, so it opens anywhere, offline, and can be attached to a bug.
#pragma once

#include "objprof/analysis/report.h"

#include <string>

namespace objprof::analysis {

std::string render_html(const Report& report);

}  // namespace objprof::analysis
