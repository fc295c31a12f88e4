// Names and the one-line rendering of paths from roots (heap_walk.h, root_path.h).
#include "objprof/root_path.h"

#include <fmt/core.h>

namespace objprof {

const char* root_kind_name(RootKind kind) noexcept {
  switch (kind) {
    case RootKind::kStatic: return "static";
    case RootKind::kStackFrame: return "stack frame";
    case RootKind::kHandle: return "handle";
    case RootKind::kRegistry: return "registry";
    case RootKind::kGlobal: return "global";
    case RootKind::kOther: return "other";
  }
  return "other";
}

std::string HeapWalker::root_name(RootKind kind, std::uint64_t token) {
  return fmt::format("{} root {}", root_kind_name(kind), token);
}

const char* path_status_name(PathStatus status) noexcept {
  switch (status) {
    case PathStatus::kFound: return "found";
    case PathStatus::kUnreachable: return "unreachable";
    case PathStatus::kObjectBudget: return "object budget exhausted";
    case PathStatus::kDepthLimit: return "depth limit reached";
  }
  return "unknown";
}

std::string format_path(const RootPath& path) {
  std::string out = path.root_name.empty() ? fmt::format("({} root)", root_kind_name(path.root_kind)) : path.root_name;
  for (std::size_t i = 0; i < path.steps.size(); ++i) {
    const PathStep& s = path.steps[i];
    // The reference taken out of the previous object belongs after it: `(Holder 0x..).payload`.
    if (i > 0 && !s.via.empty()) {
      if (s.via.front() != '[') out += '.';
      out += s.via;
    }
    const std::string type = !s.type_name.empty()        ? s.type_name
                             : s.type_id != kUnknownType ? fmt::format("type#{}", s.type_id)
                                                         : std::string("?");
    out += fmt::format(" -> ({} {:#x})", type, s.addr);
  }
  if (path.cut_steps > 0) out += fmt::format(" -> ... ({} more step{})", path.cut_steps, path.cut_steps == 1 ? "" : "s");
  return out;
}

}  // namespace objprof
