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
#include <vector>

namespace objprof {

class ChunkSink {
 public:
  virtual ~ChunkSink() = default;
  // Appends bytes (a preamble or a whole chunk).
  virtual Status write(std::span<const std::byte> bytes) = 0;
  // Makes everything written so far durable where the medium allows (fdatasync for files).
  virtual Status flush() { return {}; }
};

// Appends to a file. Each chunk is one write(2) call, so a killed process leaves whole chunks
// followed by at most one partial chunk.
class FileSink final : public ChunkSink {
 public:
  static Result<std::unique_ptr<FileSink>> create(const std::string& path);
  ~FileSink() override;
  Status write(std::span<const std::byte> bytes) override;
  Status flush() override;
  const std::string& path() const noexcept { return path_; }

 private:
  FileSink(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_;
  std::string path_;
};

// Keeps the trace in memory (tests, benchmarks, in-process analysis).
class MemorySink final : public ChunkSink {
 public:
  Status write(std::span<const std::byte> bytes) override {
    data_.insert(data_.end(), bytes.begin(), bytes.end());
    ++writes_;
    return {};
  }
  const std::vector<std::byte>& data() const noexcept { return data_; }
  std::vector<std::byte> take() noexcept { return std::move(data_); }
  // Forget the contents but keep the memory (benchmarks reuse one sink without page faults).
  void clear() noexcept { data_.clear(); }
  void reserve(std::size_t bytes) { data_.reserve(bytes); }
  std::uint64_t writes() const noexcept { return writes_; }

 private:
  std::vector<std::byte> data_;
  std::uint64_t writes_ = 0;
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
