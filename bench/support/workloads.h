// Loading the sim's workloads for benchmarks: each is parsed once at registration and kept
// alive for the whole run (benchmarks hold a pointer to it); a workload that fails to load
// is reported on stderr and left out, so the other benchmarks still run.
#pragma once

#include "sim/workloads.h"

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace objprof::bench {

inline const sim::LoadedWorkload* load_workload_for(const char* bench, const std::string& name) {
  static std::vector<std::unique_ptr<sim::LoadedWorkload>> loaded;
  auto wl = sim::load_workload(name);
  if (!wl.ok()) {
    std::fprintf(stderr, "%s: %s\n", bench, wl.error().message.c_str());
    return nullptr;
  }
  loaded.push_back(std::make_unique<sim::LoadedWorkload>(std::move(*wl)));
  return loaded.back().get();
}

}  // namespace objprof::bench
