#include "path_format.h"

#include "fmt_format.h"

namespace objprof::analysis::internal {

RootPath named_path(const TraceAnalysis& a, const trace::PathEvent& p) {
  RootPath path = p.path;
  for (PathStep& s : path.steps) {
    const auto it = a.type_index.find(s.type_id);
    if (it != a.type_index.end() && a.types[it->second].defined) s.type_name = a.types[it->second].name;
  }
  return path;
}

std::string path_text(const TraceAnalysis& a, const trace::PathEvent& p) {
  if (p.status != PathStatus::kFound)
    return fmt::format("none found at GC {} ({} after {} objects)", p.epoch, path_status_name(p.status), p.objects_visited);
  return fmt::format("{} (GC {})", format_path(named_path(a, p)), p.epoch);
}

void path_json(JsonWriter& j, const TraceAnalysis& a, const trace::PathEvent& p) {
  const RootPath path = named_path(a, p);
  j.begin_object();
  j.field("epoch", p.epoch);
  j.field("status", path_status_name(p.status));
  j.field("target", fmt::format("{:#x}", p.target));
  j.field("objects_visited", p.objects_visited);
  j.field("root_kind", root_kind_name(path.root_kind));
  j.field("root_name", path.root_name);
  j.field("cut_steps", path.cut_steps);
  j.key("steps").begin_array();
  for (const PathStep& s : path.steps) {
    j.begin_object();
    j.field("addr", fmt::format("{:#x}", s.addr));
    j.key("type_id");
    if (s.type_id == kUnknownType) j.null();
    else j.value(s.type_id);
    j.field("type", s.type_name);
    j.field("via", s.via);
    j.end_object();
  }
  j.end_array();
  j.end_object();
}

}  // namespace objprof::analysis::internal
