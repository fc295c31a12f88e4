#include "leak_output.h"

#include <fmt/core.h>

namespace objprof::cli {

std::string format_leak_groups(const std::vector<LeakGroup>& groups, std::size_t top) {
  std::uint64_t objects = 0, bytes = 0;
  for (const LeakGroup& g : groups) {
    objects += g.objects;
    bytes += g.bytes;
  }
  std::string out = fmt::format("leak report ({} site{}, {} object{}, {} bytes; most stale bytes first):\n",
                                groups.size(), groups.size() == 1 ? "" : "s", objects, objects == 1 ? "" : "s", bytes);
  for (std::size_t i = 0; i < groups.size() && i < top; ++i) {
    const LeakGroup& g = groups[i];
    out += fmt::format(
        "  #{} {} allocated at {} (site {}): {} object{}, {} bytes, score {}\n"
        "      idle for {} GCs (median {}); stale since epoch {}, latest found in epoch {}; e.g. {:#x} ({} bytes)\n",
        i + 1, format_type(g.type_name), format_site(g.method, g.bytecode_offset), g.site_id, g.objects,
        g.objects == 1 ? "" : "s", g.bytes, g.score, g.oldest_idle_epochs, g.typical_idle_epochs, g.first_detected,
        g.last_detected, g.sample, g.sample_size);
    if (g.path) out += fmt::format("      path from a root: {}\n", format_path(*g.path));
  }
  if (groups.size() > top) out += fmt::format("  ... {} more sites\n", groups.size() - top);
  return out;
}

std::string format_leak_objects(const std::vector<LeakReport>& objects, std::size_t top) {
  std::string out = fmt::format("possible leaks, one per object ({}; most stale bytes first):\n", objects.size());
  for (std::size_t i = 0; i < objects.size() && i < top; ++i) {
    const LeakReport& l = objects[i];
    out += fmt::format("  #{} {:#x} {} bytes  {}  allocated at {} (site {}), last access epoch {}, stale for {} GCs\n",
                       i + 1, l.addr, l.size, format_type(l.type_name), format_site(l.method, l.bytecode_offset),
                       l.site_id, l.last_access_epoch, l.epoch - l.last_access_epoch);
  }
  if (objects.size() > top) out += fmt::format("  ... {} more\n", objects.size() - top);
  return out;
}

nlohmann::json leak_groups_json(const std::vector<LeakGroup>& groups, const ProfilerOptions& options,
                                const ProfilerStats& stats) {
  nlohmann::json out;
  out["epoch"] = stats.epoch;
  out["stale_after_epochs"] = options.stale_after_epochs;
  out["stale_after_bytes"] = options.stale_after_bytes == ProfilerOptions::kAutoStaleBytes
                                 ? nlohmann::json("auto")
                                 : nlohmann::json(options.stale_after_bytes);
  out["stale_bytes_threshold"] = stats.stale_bytes_threshold;
  out["min_tracked_size"] = options.min_tracked_size;
  nlohmann::json list = nlohmann::json::array();
  for (const LeakGroup& g : groups) {
    nlohmann::json j;
    j["site_id"] = g.site_id;
    j["method"] = std::string(g.method);
    if (g.bytecode_offset != SiteInfo::kNoOffset) j["bytecode_offset"] = g.bytecode_offset;
    j["type_id"] = g.type_id;
    j["type"] = std::string(g.type_name);
    j["objects"] = g.objects;
    j["bytes"] = g.bytes;
    j["score"] = g.score;
    j["oldest_idle_epochs"] = g.oldest_idle_epochs;
    j["typical_idle_epochs"] = g.typical_idle_epochs;
    j["oldest_idle_bytes"] = g.oldest_idle_bytes;
    j["first_detected_epoch"] = g.first_detected;
    j["last_detected_epoch"] = g.last_detected;
    j["sample_address"] = g.sample;
    j["sample_size"] = g.sample_size;
    if (g.path) {
      nlohmann::json path;
      path["root_kind"] = root_kind_name(g.path->root_kind);
      path["root"] = g.path->root_name;
      nlohmann::json steps = nlohmann::json::array();
      for (const PathStep& step : g.path->steps) {
        nlohmann::json js;
        js["address"] = step.addr;
        js["type"] = step.type_name;
        js["via"] = step.via;
        steps.push_back(std::move(js));
      }
      path["steps"] = std::move(steps);
      path["text"] = format_path(*g.path);
      j["path"] = std::move(path);
    }
    list.push_back(std::move(j));
  }
  out["groups"] = std::move(list);
  return out;
}

}  // namespace objprof::cli
