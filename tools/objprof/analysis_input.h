// Shared by `objprof report`, `replay` and `export`: analyze a trace file with a progress bar
// on stderr (only when stderr is a terminal, so logs and pipes stay clean), print the reader's
// warning, and write output to a file or stdout.
#pragma once

#include <objprof/analysis/analyzer.h>

#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <tbb/global_control.h>

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace objprof::cli {

// The options of every command that analyzes a trace.
struct AnalysisInput {
  bool no_progress = false;
  unsigned workers = 0;  // 0: one per hardware thread

  void add_to(CLI::App* cmd) {
    cmd->add_flag("--no-progress", no_progress, "no progress bar");
    cmd->add_option("-j,--workers", workers, "threads for the analysis and the report (default: one per hardware thread)")
        ->check(CLI::Range(1u, 1024u));
  }
};

// Caps oneTBB (the report's parallel pass) at the workers asked for, while it lives.
class WorkerCap {
 public:
  explicit WorkerCap(const AnalysisInput& in) {
    if (in.workers > 0) cap_.emplace(tbb::global_control::max_allowed_parallelism, in.workers);
  }

 private:
  std::optional<tbb::global_control> cap_;
};

inline Result<analysis::TraceAnalysis> analyze_with_progress(const std::string& command, const std::string& path, const AnalysisInput& in) {
  analysis::AnalyzerOptions opt;
  opt.workers = in.workers;
  const bool bar = !in.no_progress && ::isatty(STDERR_FILENO) == 1;
  if (bar) {
    opt.progress = [command](double f) {
      const int width = 40, filled = static_cast<int>(f * width);
      fmt::print(stderr, "\r{}: reading [{}{}] {:3.0f}%", command, std::string(static_cast<std::size_t>(filled), '#'),
                 std::string(static_cast<std::size_t>(width - filled), ' '), 100 * f);
      std::fflush(stderr);
    };
  }
  auto r = analysis::analyze_file(path, opt);
  if (bar) fmt::print(stderr, "\r{:60}\r", "");
  if (r.ok())
    for (const std::string& w : r->warnings) fmt::print(stderr, "{}: warning: {}\n", command, w);
  return r;
}

// Writes `text` to `path`, or to stdout when path is empty or "-".
inline Status write_output(const std::string& path, std::string_view text) {
  if (path.empty() || path == "-") {
    if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size()) return make_error(ErrorCode::kIo, "writing to stdout failed");
    return {};
  }
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return make_error(ErrorCode::kIo, fmt::format("cannot create '{}': {}", path, std::strerror(errno)));
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const bool closed = std::fclose(f) == 0;
  if (!ok || !closed) return make_error(ErrorCode::kIo, fmt::format("writing '{}' failed: {}", path, std::strerror(errno)));
  return {};
}

}  // namespace objprof::cli
