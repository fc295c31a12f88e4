// Finding and loading the IR workloads of sim/workloads/ (described in sim/workloads/README.md).
#pragma once

#include <objprof/ir/ir.h>
#include <objprof/result.h>

#include <cstdint>
#include <string>
#include <string_view>
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
  std::string path;     // the file read, or "<embedded>/NAME.ir" for the copy built into the library
  ir::Module module;
  // Defaults the file declares in comment lines `; @size N` and `; @heap SIZE` (0 / empty: none).
  std::uint64_t default_size = 0;
  std::string default_heap;
};

// Loads NAME from disk (find_workload), else from the copy of sim/workloads compiled into the
// library, so the shipped workloads run from a binary moved away from the source tree.
Result<LoadedWorkload> load_workload(const std::string& name);

// The value of a `; @KEY VALUE` comment line in IR text, or empty.
std::string workload_directive(std::string_view text, std::string_view key);

}  // namespace objprof::sim
