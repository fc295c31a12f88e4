// TraceWriter: frames chunks from EventBuffers and writes them, in order, to a ChunkSink.
//
// Each thread appends to its own EventBuffer without locks; only handing a finished chunk to
// the sink takes the writer's mutex (once per ~64 KiB of events). The first sink error is kept
// (status()) and later chunks are counted as lost rather than silently dropped.
#pragma once

#include "objprof/event_buffer.h"
#include "objprof/result.h"
#include "objprof/trace_sink.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace objprof {

class TraceWriter {
 public:
  // Writes the preamble immediately.
  static Result<std::unique_ptr<TraceWriter>> create(std::unique_ptr<ChunkSink> sink,
                                                     std::size_t chunk_payload = trace::kDefaultChunkPayload);

  std::unique_ptr<EventBuffer> make_buffer(std::uint32_t stream);

  // The epoch stamped on chunks flushed from now on.
  void set_epoch(std::uint64_t epoch) noexcept { epoch_.store(epoch, std::memory_order_relaxed); }
  std::uint64_t epoch() const noexcept { return epoch_.load(std::memory_order_relaxed); }

  // The sweep phase of a collector that lets mutators run inside its GC bracket (lazy or
  // incremental sweeping, e.g. Lua's): from hold_mutator_chunks(e + 1) until release_held(),
  // chunks of thread streams are kept in memory, stamped e + 1, instead of being written, and
  // release_held() writes them after the bracket's gc-end. So every allocation made during
  // the bracket follows, in the file, the bracket's frees (which may have freed the memory it
  // reuses), exactly as the profiler counts it: in epoch e + 1. Control and collector chunks
  // are written at once as always. Memory: the bytes of trace the mutators write while the
  // bracket is open (nothing for a stop-the-world collector).
  void hold_mutator_chunks(std::uint64_t stamp_epoch);
  void release_held();

  // While a Gather lives, the chunks committed (by any thread) reach a sink that gathers
  // (ChunkSink::gather_bytes, a file) together, in commit order, in as few writes as its limit
  // allows, and all of them before the Gather ends. The profiler opens one around each of
  // gc_begin and gc_end: a GC hook's chunks (the mutators' buffers, the bitmap dump, the
  // collector's records, gc-end, the held chunks) are one write(2) instead of one each, and
  // they are in the file when the hook returns, as before. The file is the same byte for byte.
  // Not nested. Without a writer (nullptr) or with a sink that does not gather, it does nothing.
  class Gather {
   public:
    explicit Gather(TraceWriter* writer);
    ~Gather();
    Gather(const Gather&) = delete;
    Gather& operator=(const Gather&) = delete;

   private:
    TraceWriter* writer_;
  };

  // Frames `payload` (which must be preceded by kChunkHeaderBytes of writable space) and writes
  // it; `partial`, if given, is the checksum of the payload's first bytes the buffer took as it
  // wrote them. Used by EventBuffer.
  void commit(std::uint8_t* header, std::size_t payload_bytes, std::uint32_t stream,
              const EventBuffer::PartialCrc* partial = nullptr);

  Status flush_sink();
  Status status() const;
  std::uint64_t chunks_written() const noexcept { return chunks_.load(std::memory_order_relaxed); }
  std::uint64_t bytes_written() const noexcept { return bytes_.load(std::memory_order_relaxed); }
  std::uint64_t chunks_lost() const noexcept { return lost_.load(std::memory_order_relaxed); }
  std::size_t chunk_payload() const noexcept { return chunk_payload_; }
  ChunkSink& sink() noexcept { return *sink_; }

 private:
  TraceWriter(std::unique_ptr<ChunkSink> sink, std::size_t chunk_payload)
      : sink_(std::move(sink)), chunk_payload_(chunk_payload), gather_limit_(sink_->gather_bytes()) {}

  void write_locked(const std::uint8_t* chunk, std::size_t total);
  // Writes the gathered chunks in one sink write (or counts them lost after an error).
  void write_gathered_locked();

  std::unique_ptr<ChunkSink> sink_;
  std::size_t chunk_payload_;
  std::atomic<std::uint64_t> epoch_{0};
  mutable std::mutex mutex_;  // serialises sink writes; guards error_
  Status error_;
  bool holding_ = false;                    // guarded by mutex_
  std::uint64_t hold_epoch_ = 0;
  std::vector<std::uint8_t> held_;          // framed chunks, back to back
  const std::size_t gather_limit_;          // the sink's gather_bytes(): 0, no gathering
  bool gathering_ = false;                  // guarded by mutex_
  std::vector<std::uint8_t> gathered_;      // framed chunks, back to back, at most gather_limit_
  std::uint64_t gathered_chunks_ = 0;
  std::atomic<std::uint64_t> chunks_{0}, bytes_{0}, lost_{0};
};

}  // namespace objprof
