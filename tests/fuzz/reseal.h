// The resealed trace targets' first step: every whole chunk's CRC32C is recomputed, so that
// mutated payloads get past the checksum and reach the record decoder and the analyzer.
#pragma once

#include <objprof/crc32c.h>
#include <objprof/trace_format.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace objprof::fuzz {

// Walks the chunks as the reader frames them (a declared size that runs past the end leaves
// the rest as a partial chunk) and rewrites each stored CRC32C over stream, epoch and payload.
inline void reseal(std::vector<std::byte>& t) {
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

}  // namespace objprof::fuzz
