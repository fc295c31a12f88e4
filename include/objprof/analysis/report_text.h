// The report as text for a terminal (the default of `objprof report`).
#pragma once

#include "objprof/analysis/report.h"

#include <string>

namespace objprof::analysis {

std::string render_text(const Report& report);

}  // namespace objprof::analysis
