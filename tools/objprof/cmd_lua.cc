// `objprof lua [options] SCRIPT [ARGS...]`: runs a Lua script as `lua5.4 SCRIPT ARGS...` would
// (same stdout, stdin, exit status, package.path, arg table), in Lua 5.4 with objprof embedded
// (embed/lua: objprof-lua, next to this binary), and prints the leak report on stderr at exit.
// The options reach objprof-lua through its environment (embed/lua/objprof_lua_options.h).
#include "command.h"

#include "sim/heap.h"

#include <objprof/fate_reports.h>

#include <fmt/core.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace objprof::cli {
namespace {

struct LuaOptions {
  std::uint32_t stale_after = 4;
  std::string min_size = "256";
  std::string stale_bytes = "auto";
  std::string trace;
  std::string gc;  // "": Lua's standalone default (generational)
  std::string heap = "1G";
  bool no_report = false;
  bool elim = false;
  std::string fates = "cheaper";
  std::vector<std::string> script_and_args;
};

int lua_usage_error(const std::string& msg) {
  fmt::print(stderr, "objprof lua: {}\n", msg);
  return 2;
}

// objprof-lua is built next to this binary (cmake/lua_embedding.cmake).
std::string interpreter_path() {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "objprof-lua";
  return (self.parent_path() / "objprof-lua").string();
}

int run_lua(const LuaOptions& o) {
  if (o.script_and_args.empty()) return lua_usage_error("give a SCRIPT to run (or - for stdin)");
  if (o.stale_after == 0) return lua_usage_error("--stale-after must be at least 1");
  for (const auto& [name, text] : {std::pair<const char*, const std::string&>{"--min-size", o.min_size}, {"--heap", o.heap}}) {
    auto v = sim::parse_size(text);
    if (!v.ok()) return lua_usage_error(fmt::format("{}: {}", name, v.error().message));
  }
  if (o.stale_bytes != "auto")
    if (auto v = sim::parse_size(o.stale_bytes); !v.ok()) return lua_usage_error("--stale-bytes: " + v.error().message);
  const std::string lua = interpreter_path();
  if (::access(lua.c_str(), X_OK) != 0)
    return lua_usage_error(fmt::format("{} is not there ({}): build with OBJPROF_BUILD_LUA=ON after scripts/setup.sh has fetched Lua",
                            lua, std::strerror(errno)));
  ::setenv("OBJPROF_LUA_STALE_AFTER", std::to_string(o.stale_after).c_str(), 1);
  ::setenv("OBJPROF_LUA_MIN_SIZE", o.min_size.c_str(), 1);
  ::setenv("OBJPROF_LUA_STALE_BYTES", o.stale_bytes.c_str(), 1);
  ::setenv("OBJPROF_LUA_HEAP", o.heap.c_str(), 1);
  ::setenv("OBJPROF_LUA_REPORT", o.no_report ? "0" : "1", 1);
  ::setenv("OBJPROF_LUA_ELIM", o.elim ? "1" : "0", 1);
  ::setenv("OBJPROF_LUA_FATES", o.fates.c_str(), 1);
  if (!o.trace.empty()) ::setenv("OBJPROF_LUA_TRACE", o.trace.c_str(), 1);
  else ::unsetenv("OBJPROF_LUA_TRACE");
  if (!o.gc.empty()) ::setenv("OBJPROF_LUA_GC", o.gc.c_str(), 1);
  else ::unsetenv("OBJPROF_LUA_GC");
  // argv[0] is what lua5.4 calls itself in messages and arg[-1].
  std::vector<char*> argv;
  std::string progname = "lua5.4";
  argv.push_back(progname.data());
  std::vector<std::string> args = o.script_and_args;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  ::execv(lua.c_str(), argv.data());
  return lua_usage_error(fmt::format("cannot run {}: {}", lua, std::strerror(errno)));
}

const RegisterCommand kLua([](CLI::App& app) -> std::function<int()> {
  auto opt = std::make_shared<LuaOptions>();
  CLI::App* cmd = app.add_subcommand("lua", "Run a Lua 5.4 script with objprof embedded; leak report on stderr at exit");
  cmd->add_option("--stale-after", opt->stale_after, "GCs without an access before an object is a possible leak (GC_K)")
      ->capture_default_str();
  cmd->add_option("--min-size", opt->min_size, "smallest footprint tracked online, bytes (K/M/G suffixes)")
      ->capture_default_str();
  cmd->add_option("--stale-bytes", opt->stale_bytes,
                  "and idle while the program allocated this much (K/M/G; 0: GC_K alone; auto: its busiest epoch)")
      ->capture_default_str();
  cmd->add_option("--trace", opt->trace, "write the binary trace to FILE (objprof report/replay/export read it)");
  cmd->add_option("--gc", opt->gc, "Lua's collector: incremental or generational (default: generational, as lua5.4)")
      ->check(CLI::IsMember({"incremental", "generational"}));
  cmd->add_option("--heap", opt->heap, "size of the region that holds every Lua object (K/M/G suffixes)")
      ->capture_default_str();
  cmd->add_flag("--no-report", opt->no_report, "print no leak report at exit");
  cmd->add_option("--fates", opt->fates,
                  "how the leak detector learns each collection's frees: hooks (the sweep reports each), survivors "
                  "(atomic() answers for the tracked objects alone) or cheaper (per collection, whichever costs less)")
      ->check(CLI::Validator(
          [](const std::string& name) -> std::string {
            // The names fate_reports.h reads for every front end (objprof run, OBJPROF_LUA_FATES).
            if (fate_reports_from_name(name)) return {};
            return fmt::format("{} is not {}", name, kFateReportsChoices);
          },
          std::string(kFateReportsChoices)))
      ->capture_default_str();
  cmd->add_flag("--elim", opt->elim,
                "remove the barriers objprof's elimination pass proves redundant from the bytecode Lua loads "
                "(an object a running frame holds then counts as accessed at each GC)");
  auto script = std::make_shared<std::string>();
  cmd->add_option("script", *script, "SCRIPT [ARGS...]: as for lua5.4 (- reads the script from stdin)")->required();
  // Everything from SCRIPT on belongs to the script, options included.
  cmd->prefix_command();
  return [opt, cmd, script] {
    opt->script_and_args = {*script};
    for (const std::string& extra : cmd->remaining()) opt->script_and_args.push_back(extra);
    return run_lua(*opt);
  };
});

}  // namespace
}  // namespace objprof::cli
