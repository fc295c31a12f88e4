// The online leak report as the CLI shows it: grouped by (site, type) in text, the same groups
// as JSON for scripts and embedders (`objprof run --leaks-json=FILE`), or one line per object.
#pragma once

#include <objprof/profiler.h>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace objprof::cli {

// "leak report (N sites, M objects): ..." then one ranked entry per group, at most `top`.
std::string format_leak_groups(const std::vector<LeakGroup>& groups, std::size_t top);
// One line per object, most stale bytes first, at most `top`.
std::string format_leak_objects(const std::vector<LeakReport>& objects, std::size_t top);
// {"epoch":..., "stale_after_epochs":..., "stale_after_bytes":..., "groups":[{...}, ...]}
nlohmann::json leak_groups_json(const std::vector<LeakGroup>& groups, const ProfilerOptions& options,
                                const ProfilerStats& stats);

}  // namespace objprof::cli
