#include "workloads.h"

#include "embedded_workloads.h"

#include <objprof/ir/text.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

namespace objprof::sim {

namespace fs = std::filesystem;

const std::vector<std::string>& workload_names() {
  static const std::vector<std::string> names = {"listleak", "swapleak", "points",   "scimark",
                                                 "graph",    "threads",  "requests", "sessions"};
  return names;
}

Result<std::string> find_workload(const std::string& name) {
  std::error_code ec;
  if (name.find('/') != std::string::npos || name.ends_with(".ir")) {
    if (fs::is_regular_file(name, ec)) return name;
  }
  std::vector<fs::path> dirs;
  if (const char* env = std::getenv("OBJPROF_SIM_WORKLOADS")) dirs.emplace_back(env);
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path bin = exe.parent_path();
    dirs.push_back(bin / ".." / "share" / "objprof" / "workloads");
    dirs.push_back(bin / ".." / ".." / "sim" / "workloads");
    dirs.push_back(bin / ".." / ".." / ".." / "sim" / "workloads");
  }
#ifdef OBJPROF_SIM_WORKLOAD_DIR
  dirs.emplace_back(OBJPROF_SIM_WORKLOAD_DIR);
#endif
  std::string searched;
  for (const fs::path& d : dirs) {
    const std::string p = (d / (name + ".ir")).lexically_normal().string();
    if (fs::is_regular_file(p, ec)) return p;
    if (searched.find("\n  " + p + "\n") == std::string::npos && !searched.ends_with("\n  " + p)) searched += "\n  " + p;
  }
  std::string known;
  for (const auto& n : workload_names()) known += (known.empty() ? "" : ", ") + n;
  return make_error(ErrorCode::kInvalidArgument,
                    "no workload '" + name + "' (known: " + known + "; or give a path to an .ir file); searched:" + searched);
}

std::string workload_directive(std::string_view text, std::string_view key) {
  const std::string tag = "; @" + std::string(key) + " ";
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    if (line.starts_with(tag)) {
      line.remove_prefix(tag.size());
      while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
      return std::string(line);
    }
    pos = end + 1;
  }
  return {};
}

namespace {

Result<LoadedWorkload> parse_workload(std::string path, std::string_view text) {
  LoadedWorkload w;
  w.path = std::move(path);
  const std::string size = workload_directive(text, "size");
  if (!size.empty()) {
    char* end = nullptr;
    w.default_size = std::strtoull(size.c_str(), &end, 10);
    if (end == size.c_str() || *end != '\0')
      return make_error(ErrorCode::kParse, w.path + ": '; @size' must be a number, not '" + size + "'");
  }
  w.default_heap = workload_directive(text, "heap");
  auto module = ir::parse_module(std::string(text), w.path);
  if (!module.ok()) return module.error();
  w.module = std::move(*module);
  return w;
}

}  // namespace

Result<LoadedWorkload> load_workload(const std::string& name) {
  auto path = find_workload(name);
  if (!path.ok()) {
    for (const EmbeddedWorkload& e : embedded_workloads())
      if (e.name == name) return parse_workload("<embedded>/" + name + ".ir", e.text);
    return path.error();
  }
  std::ifstream in(*path, std::ios::binary);
  if (!in) return make_error(ErrorCode::kIo, "cannot read " + *path);
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_workload(*path, ss.str());
}

}  // namespace objprof::sim
