#include "leak_groups.h"

#include "objprof/profiler.h"

#include <fmt/core.h>

#include <algorithm>
#include <tuple>

namespace objprof {

std::string format_leak_group(const LeakGroup& g) {
  const std::string where = format_site(g.method, g.bytecode_offset);
  return fmt::format(
      "objprof: possible leak: {} object{} ({} bytes) of {} allocated at {} (site {}), idle for {} GCs (median {}), "
      "first found in epoch {}; e.g. {:#x} ({} bytes)",
      g.objects, g.objects == 1 ? "" : "s", g.bytes, format_type(g.type_name), where, g.site_id, g.oldest_idle_epochs,
      g.typical_idle_epochs, g.first_detected, g.sample, g.sample_size);
}

namespace internal {

namespace {
std::uint64_t group_key(std::uint32_t site, std::uint32_t type) { return std::uint64_t{site} << 32 | type; }

// Is `a` a better sample (more stale) than `b`?
bool more_stale(const StaleObject& a, const StaleObject& b) {
  if (a.idle_epochs != b.idle_epochs) return a.idle_epochs > b.idle_epochs;
  if (a.size != b.size) return a.size > b.size;
  return a.addr < b.addr;
}
}  // namespace

std::vector<LeakGroup> group_stale(std::vector<StaleObject>& objects, std::uint64_t epoch,
                                   const std::unordered_map<std::uint64_t, Detection>& detections) {
  // Sorted by group, then most stale first: each group is one run, its first object the sample.
  std::sort(objects.begin(), objects.end(), [](const StaleObject& a, const StaleObject& b) {
    if (a.site != b.site || a.type != b.type) return std::tie(a.site, a.type) < std::tie(b.site, b.type);
    return more_stale(a, b);
  });
  std::vector<LeakGroup> groups;
  for (std::size_t i = 0; i < objects.size();) {
    std::size_t j = i;
    LeakGroup g;
    g.site_id = objects[i].site;
    g.type_id = objects[i].type;
    g.epoch = epoch;
    g.sample = objects[i].addr;
    g.sample_size = objects[i].size;
    g.oldest_idle_epochs = objects[i].idle_epochs;
    g.oldest_idle_bytes = objects[i].idle_bytes;
    for (; j < objects.size() && objects[j].site == g.site_id && objects[j].type == g.type_id; ++j) {
      const StaleObject& o = objects[j];
      ++g.objects;
      g.bytes += o.size;
      g.score += o.size * o.idle_epochs;
      g.new_objects += o.is_new ? 1 : 0;
    }
    // The run is ordered by idle epochs, descending: its middle is the median.
    g.typical_idle_epochs = objects[i + (j - i) / 2].idle_epochs;
    Detection d;
    if (auto it = detections.find(group_key(g.site_id, g.type_id)); it != detections.end()) d = it->second;
    g.first_detected = d.first ? d.first - 1 : epoch;
    g.last_detected = d.last ? d.last - 1 : epoch;
    groups.push_back(g);
    i = j;
  }
  std::sort(groups.begin(), groups.end(), [](const LeakGroup& a, const LeakGroup& b) {
    if (a.score != b.score) return a.score > b.score;
    if (a.bytes != b.bytes) return a.bytes > b.bytes;
    return std::tie(a.site_id, a.type_id) < std::tie(b.site_id, b.type_id);
  });
  return groups;
}

void record_detections(std::vector<LeakGroup>& groups, std::uint64_t epoch,
                       std::unordered_map<std::uint64_t, Detection>& detections) {
  for (LeakGroup& g : groups) {
    if (g.new_objects == 0) continue;
    Detection& stored = detections[group_key(g.site_id, g.type_id)];
    if (stored.first == 0) stored.first = epoch + 1;  // stored one past, so 0 means never
    stored.last = epoch + 1;
    g.first_detected = stored.first - 1;
    g.last_detected = epoch;
  }
}

void rank_objects(std::vector<StaleObject>& objects) {
  std::sort(objects.begin(), objects.end(), [](const StaleObject& a, const StaleObject& b) {
    const std::uint64_t x = a.size * a.idle_epochs, y = b.size * b.idle_epochs;
    if (x != y) return x > y;
    return a.addr < b.addr;
  });
}

}  // namespace internal
}  // namespace objprof
