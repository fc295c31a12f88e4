// Finding and loading the IR workloads of sim/workloads/ (described in sim/workloads/README.md).
#pragma once

#include <objprof/ir/ir.h>
#include <objprof/result.h>

#include <string>
#include <vector>

namespace objprof::sim {

// The workloads shipped in sim/workloads, by name.
const std::vector<std::string>& workload_names();

// Resolves NAME to a file: NAME itself if it is an existing path; otherwise NAME.ir in
// $OBJPROF_SIM_WORKLOADS, next to the binary (../share/objprof/workloads, ../../sim/workloads,
// ../../../sim/workloads) and in the source tree this library was built from.
// Errors: kInvalidArgument listing every place searched.
Result<std::string> find_workload(const std::string& name);

struct LoadedWorkload {
  std::string path;
  ir::Module module;
};
Result<LoadedWorkload> load_workload(const std::string& name);

}  // namespace objprof::sim
