// Fuzz target: like fuzz_trace, but every whole chunk's CRC32C is first recomputed (reseal.h),
// so the mutated payloads get past the checksum and reach the record decoder and the analyzer.
// The trace is read with the incremental Analyzer (on this thread) rather than analyze().
#include "reseal.h"
#include "trace_views.h"

#include <cstddef>
#include <cstdint>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace objprof;
  fuzz::single_threaded();
  std::vector<std::byte> t(reinterpret_cast<const std::byte*>(data), reinterpret_cast<const std::byte*>(data) + size);
  fuzz::reseal(t);
  fuzz::load_contents(t);
  analysis::Analyzer analyzer;
  analyzer.set_input_bytes(t.size());
  auto summary = trace::read(t, analyzer.visitor());
  if (!summary.ok()) return 0;
  auto a = analyzer.take(*summary);
  if (a.ok()) fuzz::all_views(*a);
  return 0;
}
