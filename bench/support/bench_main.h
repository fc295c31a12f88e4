// The main() every objprof benchmark shares, plus side-by-side ratio tables.
//
// Targets in issues are ratios ("All within 1.05x of no barriers"), and a ratio is only
// meaningful when both sides were measured in the same run on the same machine state. A
// RatioTable names a baseline rung; benchmarks named "<prefix>/<group>/<rung>" are collected as
// they are reported (with --benchmark_repetitions, the table's aggregate, the median unless it
// names another such as "min"; else the single run) and, after all benchmarks ran, one table per prefix prints each rung's real time divided
// by its group's baseline, plus the geometric mean over groups.
#pragma once

#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace objprof::bench {

struct RatioTable {
  std::string prefix;                 // e.g. "ladder"
  std::string baseline;               // rung every ratio is relative to, e.g. "no-barriers"
  std::vector<std::string> rungs;     // column order
  bool cpu_time = false;              // compare CPU time instead of real (or manual) time
  std::string time_name{};            // what the compared time is, for the title; default real/CPU
  // Which repetition aggregate to compare. "min" (registered by the benchmark with
  // ComputeStatistics) suits whole-program runs on a VM, whose noise only ever adds time.
  std::string aggregate = "median";
};

class RatioReporter : public benchmark::ConsoleReporter {
 public:
  explicit RatioReporter(std::vector<RatioTable> tables) : tables_(std::move(tables)) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.error_occurred) continue;
      std::string name = r.run_name.function_name;  // "<prefix>/<group>/<rung>"
      const auto first = name.find('/');
      const auto last = name.rfind('/');
      if (first == std::string::npos || first == last) continue;
      const std::string prefix = name.substr(0, first);
      bool cpu = false;
      std::string aggregate = "median";
      for (const RatioTable& table : tables_)
        if (table.prefix == prefix) {
          cpu = table.cpu_time;
          aggregate = table.aggregate;
        }
      const bool chosen = r.run_type == Run::RT_Aggregate && r.aggregate_name == aggregate;
      const bool single = r.run_type == Run::RT_Iteration && r.repetitions <= 1;
      if (!chosen && !single) continue;
      const double t = cpu ? r.GetAdjustedCPUTime() : r.GetAdjustedRealTime();
      times_[prefix][name.substr(first + 1, last - first - 1)][name.substr(last + 1)] = t;
    }
    ConsoleReporter::ReportRuns(runs);
  }

  void Finalize() override {
    ConsoleReporter::Finalize();
    for (const RatioTable& table : tables_) print(table);
  }

 private:
  void print(const RatioTable& table) const {
    auto it = times_.find(table.prefix);
    if (it == times_.end()) return;
    const std::string what = !table.time_name.empty() ? table.time_name : table.cpu_time ? "CPU" : "real";
    std::printf("\n%s: %s time relative to '%s', same run (%s of the repetitions)\n%-24s", table.prefix.c_str(),
                what.c_str(), table.baseline.c_str(), table.aggregate.c_str(), "");
    for (const std::string& rung : table.rungs) std::printf(" %14s", rung.c_str());
    std::printf("\n");
    std::map<std::string, std::pair<double, int>> log_sum;  // rung -> (sum of log ratio, groups)
    for (const auto& [group, by_rung] : it->second) {
      auto base = by_rung.find(table.baseline);
      if (base == by_rung.end() || base->second <= 0) continue;
      std::printf("%-24s", group.c_str());
      for (const std::string& rung : table.rungs) {
        auto r = by_rung.find(rung);
        if (r == by_rung.end()) {
          std::printf(" %14s", "-");
          continue;
        }
        const double ratio = r->second / base->second;
        std::printf(" %13.3fx", ratio);
        log_sum[rung].first += std::log(ratio);
        log_sum[rung].second += 1;
      }
      std::printf("\n");
    }
    std::printf("%-24s", "geomean");
    for (const std::string& rung : table.rungs) {
      auto s = log_sum.find(rung);
      if (s == log_sum.end() || s->second.second == 0) std::printf(" %14s", "-");
      else std::printf(" %13.3fx", std::exp(s->second.first / s->second.second));
    }
    std::printf("\n");
  }

  std::vector<RatioTable> tables_;
  std::map<std::string, std::map<std::string, std::map<std::string, double>>> times_;
};

// Registers (register_all), parses the Google Benchmark flags, runs, and prints the ratio
// tables when any are given.
template <class RegisterFn>
int run_benchmarks(int argc, char** argv, RegisterFn&& register_all, std::vector<RatioTable> tables = {}) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  if (tables.empty()) {
    benchmark::RunSpecifiedBenchmarks();
  } else {
    RatioReporter reporter(std::move(tables));
    benchmark::RunSpecifiedBenchmarks(&reporter);
  }
  benchmark::Shutdown();
  return 0;
}

}  // namespace objprof::bench
