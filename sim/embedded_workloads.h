// The workload files of sim/workloads/, compiled into objprof_sim (see embed_workloads.cmake), so
// the shipped workloads run from a binary that was copied away from the source tree.
#pragma once

#include <string_view>
#include <vector>

namespace objprof::sim {

struct EmbeddedWorkload {
  std::string_view name;  // file name without .ir
  std::string_view text;  // the file's IR text, byte for byte
};

const std::vector<EmbeddedWorkload>& embedded_workloads();

}  // namespace objprof::sim
