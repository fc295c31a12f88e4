// Fuzz target: trace bytes -> trace reader -> analyzer -> every report view and format.
// Mutations mostly break a chunk's CRC32C, so this target exercises framing, checksums and
// truncation; fuzz_trace_resealed.cc reaches the record decoder.
#include "trace_views.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace objprof;
  fuzz::single_threaded();
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  fuzz::load_contents(bytes);
  auto a = analysis::analyze(bytes);
  if (a.ok()) fuzz::all_views(*a);
  return 0;
}
