// ChunkSink: where finished trace chunks go. A sink receives whole chunks (header + payload)
// in the order the profiler wants them in the file. Calls are serialised by the TraceWriter,
// so a sink needs no locking of its own.
#pragma once

#include "objprof/result.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace objprof {

class ChunkSink {
 public:
  virtual ~ChunkSink() = default;
  // Appends bytes: the preamble, or one or more whole chunks back to back (several only if
  // gather_bytes() is not 0).
  virtual Status write(std::span<const std::byte> bytes) = 0;
  // Makes everything written so far durable where the medium allows (fdatasync for files).
  virtual Status flush() { return {}; }
  // A sink whose writes cost more per call than per byte (a file: a system call, and the file
  // system's bookkeeping, per write) returns how many bytes of whole chunks it takes in one
  // write: the writer then hands it the chunks of one GC hook (gc_begin, gc_end) together, up
  // to that many bytes (TraceWriter::Gather). 0 (the default): one chunk per write.
  virtual std::size_t gather_bytes() const noexcept { return 0; }
};

// Appends to a file. Each write is one write(2) call (whole chunks: all of one GC hook's, up
// to 1 MiB), so a killed process leaves whole chunks followed by at most one partial chunk.
class FileSink final : public ChunkSink {
 public:
  static Result<std::unique_ptr<FileSink>> create(const std::string& path);
  ~FileSink() override;
  Status write(std::span<const std::byte> bytes) override;
  Status flush() override;
  // A GC of a small heap writes four chunks of a few hundred bytes; one system call for them
  // saves three (Lua's richards with a trace: 9,926 write(2) calls -> docs/results.md).
  std::size_t gather_bytes() const noexcept override { return std::size_t{1} << 20; }
  const std::string& path() const noexcept { return path_; }

 private:
  FileSink(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_;
  std::string path_;
};

// Keeps the trace in memory (tests, benchmarks, in-process analysis, a runtime that ships its
// trace elsewhere). The bytes live in fixed-size segments: growing never copies what was
// written, and the segments stay with the sink when it is emptied (take, drain, clear), so a
// runtime that drains it now and then writes into memory it has already faulted in — the
// write path is one memcpy. reserve() faults memory in ahead of time (as a JVM's
// AlwaysPreTouch does); release() gives the unused segments back.
class MemorySink final : public ChunkSink {
 public:
  static constexpr std::size_t kDefaultSegmentBytes = std::size_t{4} << 20;

  explicit MemorySink(std::size_t segment_bytes = kDefaultSegmentBytes);
  ~MemorySink() override;
  MemorySink(const MemorySink&) = delete;
  MemorySink& operator=(const MemorySink&) = delete;

  Status write(std::span<const std::byte> bytes) override;

  // Everything written since the sink was last emptied, contiguous. Several segments are
  // joined into one copy, kept until the next write or emptying (the view lives as long).
  std::span<const std::byte> data() const;
  std::size_t size() const noexcept { return size_; }
  // The bytes as one vector; the sink is emptied and keeps its segments.
  std::vector<std::byte> take();
  // Passes the bytes to `consume`, one span per segment in order, without copying them, then
  // empties the sink (keeping its segments): the way to ship a trace at memory speed.
  template <class Consume>
  void drain(Consume&& consume) {
    for (std::size_t i = 0; i < used_; ++i) consume(std::span<const std::byte>(segments_[i].bytes, fill(i)));
    clear();
  }
  // Forgets the contents, keeps the memory.
  void clear() noexcept;
  // Makes room for `bytes` more without faulting on the write path: allocates the segments
  // and touches every page of them now.
  void reserve(std::size_t bytes);
  // Returns the segments that hold nothing to the operating system.
  void release() noexcept;
  // Bytes of memory the sink holds (segments, filled or not).
  std::size_t capacity() const noexcept { return segments_.size() * segment_bytes_; }
  std::uint64_t writes() const noexcept { return writes_; }

 private:
  std::size_t fill(std::size_t i) const noexcept { return i + 1 < used_ ? segment_bytes_ : last_fill_; }
  void next_segment();

  // Mapped directly (not malloc'ed), so that release() really returns memory and a new
  // segment is really new.
  struct Segment {
    Segment(std::byte* b, std::size_t n) noexcept : bytes(b), size(n) {}
    Segment(Segment&& o) noexcept : bytes(std::exchange(o.bytes, nullptr)), size(o.size) {}
    Segment& operator=(Segment&& o) noexcept {
      std::swap(bytes, o.bytes);
      std::swap(size, o.size);
      return *this;
    }
    ~Segment();
    std::byte* bytes;
    std::size_t size;
  };

  std::size_t segment_bytes_;
  std::vector<Segment> segments_;  // [0, used_) hold data, the rest are spare
  std::size_t used_ = 0;       // segments holding data
  std::size_t last_fill_ = 0;  // bytes in segments_[used_ - 1]
  std::size_t size_ = 0;
  std::uint64_t writes_ = 0;
  mutable std::vector<std::byte> joined_;  // data() of several segments
  mutable bool joined_valid_ = false;
};

// Counts bytes and drops them (benchmarks of the encoding path alone).
class CountingSink final : public ChunkSink {
 public:
  Status write(std::span<const std::byte> bytes) override {
    bytes_ += bytes.size();
    ++writes_;
    return {};
  }
  std::uint64_t bytes() const noexcept { return bytes_; }
  std::uint64_t writes() const noexcept { return writes_; }

 private:
  std::uint64_t bytes_ = 0;
  std::uint64_t writes_ = 0;
};

}  // namespace objprof
