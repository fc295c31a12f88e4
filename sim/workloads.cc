#include "workloads.h"

#include <objprof/ir/text.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

namespace objprof::sim {

namespace fs = std::filesystem;

const std::vector<std::string>& workload_names() {
  static const std::vector<std::string> names = {"listleak", "swapleak", "points", "scimark", "graph", "threads"};
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

Result<LoadedWorkload> load_workload(const std::string& name) {
  auto path = find_workload(name);
  if (!path.ok()) return path.error();
  std::ifstream in(*path, std::ios::binary);
  if (!in) return make_error(ErrorCode::kIo, "cannot read " + *path);
  std::stringstream ss;
  ss << in.rdbuf();
  auto module = ir::parse_module(ss.str(), *path);
  if (!module.ok()) return module.error();
  return LoadedWorkload{*path, std::move(*module)};
}

}  // namespace objprof::sim
