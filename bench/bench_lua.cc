// Stock Lua against objprof-Lua, without and with the trace, and with barrier elimination on
// its bytecode (OBJPROF_LUA_ELIM=1), side by side in one run: each
// benchmark runs one interpreter on one program of bench/lua as a child process and reports
// the child's CPU time (user + system, from wait4), so a busy machine's preemption does not
// count. Run with --benchmark_repetitions=N --benchmark_enable_random_interleaving=true to
// interleave the variants (docs/results.md). The ratio table compares the minimum of the
// repetitions: noise only ever adds time to a whole-program run.
//
// Counters of the traced variant: trace bytes per allocation (allocation and resize records
// included, read back from the trace).
#include "support/bench_main.h"

#include <objprof/trace_reader.h>

#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

extern char** environ;

namespace {

struct Program {
  const char* name;
  const char* arg;  // size: about half a second of stock Lua on the 2-core VM
};
constexpr Program kPrograms[] = {
    {"binary_trees", "13"}, {"nbody", "150000"},      {"spectral_norm", "220"}, {"fannkuch", "9"},
    {"richards", "3000"},   {"string_build", "80000"}, {"json", "25"},
};
constexpr const char* kVariants[] = {"stock", "objprof", "objprof-trace", "objprof-elim"};

std::string bin_dir() { return std::filesystem::read_symlink("/proc/self/exe").parent_path().string(); }

// Runs the program at `path` with argv `args` and the extra environment; returns the child's
// CPU seconds, or -1.
double run_child(const std::string& path, const std::vector<std::string>& args, const std::vector<std::string>& extra_env) {
  std::vector<std::string> env_store;
  for (char** e = environ; *e; ++e) env_store.emplace_back(*e);
  for (const std::string& e : extra_env) env_store.push_back(e);
  std::vector<char*> envp, argv;
  for (std::string& e : env_store) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> arg_store = args;
  for (std::string& a : arg_store) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, path.c_str(), &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int status = 0;
  rusage ru{};
  if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

struct AllocCounter final : objprof::trace::Visitor {
  std::uint64_t allocs = 0;
  void alloc(const objprof::trace::AllocEvent&) override { ++allocs; }
};

void BM_lua(benchmark::State& state, const Program& p, const std::string& variant) {
  const std::string dir = bin_dir();
  const std::string script = std::string(OBJPROF_BENCH_LUA_DIR) + "/" + p.name + ".lua";
  const bool stock = variant == "stock";
  const std::string trace = (std::filesystem::temp_directory_path() / ("bench_lua_" + std::to_string(::getpid()) + ".trace")).string();
  std::vector<std::string> env{"OBJPROF_LUA_REPORT=0"};
  if (variant == "objprof-trace") env.push_back("OBJPROF_LUA_TRACE=" + trace);
  if (variant == "objprof-elim") env.push_back("OBJPROF_LUA_ELIM=1");
  const std::string path = dir + (stock ? "/lua-stock" : "/objprof-lua");
  // The same argv[0] for every variant: Lua keeps it in the `arg` table, where its length
  // counts toward the collector's debt, so names of other lengths would collect at other
  // moments (a small effect: 0.04 % of binary_trees' instructions for two bytes).
  const std::vector<std::string> args{"lua", script, p.arg};
  for (auto _ : state) {
    const double cpu = run_child(path, args, env);
    if (cpu < 0) {
      state.SkipWithError(("running " + path + " " + script + " failed").c_str());
      return;
    }
    state.SetIterationTime(cpu);
  }
  if (variant == "objprof-trace") {
    AllocCounter count;
    if (objprof::trace::read_file(trace, count).ok() && count.allocs > 0) {
      std::error_code ec;
      const auto bytes = std::filesystem::file_size(trace, ec);
      state.counters["allocs"] = static_cast<double>(count.allocs);
      state.counters["trace_B_per_alloc"] = static_cast<double>(bytes) / static_cast<double>(count.allocs);
    }
    std::filesystem::remove(trace);
  }
}

void register_all() {
  for (const Program& p : kPrograms)
    for (const char* v : kVariants)
      benchmark::RegisterBenchmark((std::string("lua/") + p.name + "/" + v).c_str(), BM_lua, p, std::string(v))
          ->UseManualTime()
          ->Iterations(1)
          ->Unit(benchmark::kMillisecond)
          ->ComputeStatistics("min", [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); });
}

}  // namespace

int main(int argc, char** argv) {
  return objprof::bench::run_benchmarks(argc, argv, register_all,
                                        {{"lua", "stock", {"stock", "objprof", "objprof-trace", "objprof-elim"}, false, "child CPU", "min"}});
}
