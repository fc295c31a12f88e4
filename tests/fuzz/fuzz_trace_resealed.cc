// Fuzz target: like fuzz_trace, but every whole chunk's CRC32C is first recomputed, so the
// mutated payloads get past the checksum and reach the record decoder and the analyzer. The
// trace is read with the incremental Analyzer (on this thread) rather than analyze().
#include "trace_views.h"

#include <objprof/crc32c.h>
#include <objprof/trace_format.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {

// Walks the chunks as the reader frames them (a declared size that runs past the end leaves
// the rest as a partial chunk) and rewrites each stored CRC32C over stream, epoch and payload.
void reseal(std::vector<std::byte>& t) {
  using namespace objprof::trace;
  auto* p = reinterpret_cast<std::uint8_t*>(t.data());
  std::size_t pos = kPreambleBytes;
  while (pos + kChunkHeaderBytes <= t.size()) {
    std::uint32_t payload = 0;
    std::memcpy(&payload, p + pos + 4, 4);
    if (payload > t.size() - pos - kChunkHeaderBytes) break;
    std::uint32_t crc = objprof::crc32c(p + pos + 12, 12);
    crc = objprof::crc32c(p + pos + kChunkHeaderBytes, payload, crc);
    std::memcpy(p + pos + 8, &crc, 4);
    pos += kChunkHeaderBytes + payload;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace objprof;
  fuzz::single_threaded();
  std::vector<std::byte> t(reinterpret_cast<const std::byte*>(data), reinterpret_cast<const std::byte*>(data) + size);
  reseal(t);
  fuzz::load_contents(t);
  analysis::Analyzer analyzer;
  analyzer.set_input_bytes(t.size());
  auto summary = trace::read(t, analyzer.visitor());
  if (!summary.ok()) return 0;
  auto a = analyzer.take(*summary);
  if (a.ok()) fuzz::all_views(*a);
  return 0;
}
