// Record relay (private): a trace::Visitor that copies what the reader decodes into batches
// (Recorder), and their replay, in the same order, into another Visitor (replay). With it the
// reader and the analyzer's front run on two threads: analyze() does so from three workers up
// (analyzer.cc), so that the sequential part of an analysis is the larger of the two stages
// rather than their sum.
//
// Every Visitor call is recorded, chunk_end included, so the visitor that replays a batch sees
// exactly the calls, arguments and order the reader made. A read that fails stops after the
// records before the failure, and so does the replay of what was recorded.
#pragma once

#include "fixed_list.h"
#include "objprof/config.h"
#include "objprof/trace_reader.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <utility>
#include <vector>

namespace objprof::analysis::internal {

struct RecordBatch {
  // A batch is handed over once it holds this many records (and at the end of the read).
  static constexpr std::size_t kRecords = 8192;
  struct Record {
    enum Kind : std::uint8_t {
      kHeader, kTypeDef, kSiteDef, kThreadDef, kThreadEnd, kAlloc, kMove, kFree, kResize,
      kGcBegin, kGcEnd, kBits, kStale, kPath, kEnd, kChunkEnd
    } kind;
    std::uint8_t flag = 0;  // kMove, kFree: a range; kGcBegin, kGcEnd: the GC's kind
    // kAlloc: thread, site, type. kResize, kThreadEnd: thread. kBits: space. kHeader, kTypeDef,
    // kSiteDef, kThreadDef, kPath: the index of the record in its side vector.
    std::uint32_t a = 0, b = 0, c = 0;
    // kAlloc: addr, size, epoch, bytes clock. kMove: from, to, bytes, epoch. kFree: addr, epoch,
    // bytes. kResize: addr, bytes, epoch. kGcBegin, kGcEnd: epoch, bytes allocated. kBits: epoch,
    // first word in `words`, word count. kStale: addr, last access, epoch. kEnd: epoch, bytes
    // allocated. kChunkEnd: the chunk's bytes.
    std::uint64_t w = 0, x = 0, y = 0, z = 0;
  };
  FixedList<Record, kRecords> records;
  // The records that hold strings or lists (few: definitions, the header, paths).
  std::vector<trace::Header> headers;
  std::vector<trace::TypeDef> types;
  std::vector<trace::SiteDef> sites;
  std::vector<trace::ThreadDef> threads;
  std::vector<trace::PathEvent> paths;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> words;  // kBits' bitmap words

  bool full() const noexcept { return records.full(); }
  bool empty() const noexcept { return records.empty(); }
  void clear() noexcept;
  // What it holds now, capacity included (the analyzer's peak memory counts it).
  std::uint64_t memory_bytes() const noexcept;
};

class Recorder final : public trace::Visitor {
 public:
  // `handoff` receives each full batch and returns an empty one to continue with.
  using Handoff = std::function<RecordBatch*(RecordBatch*)>;
  Recorder(RecordBatch* first, Handoff handoff) : batch_(first), handoff_(std::move(handoff)) {}
  // Hands over the last, partial batch (the handoff's return value is then ignored).
  void finish();

  void header(const trace::Header& h) override;
  void type_def(const trace::TypeDef& t) override;
  void site_def(const trace::SiteDef& s) override;
  void thread_def(const trace::ThreadDef& t) override;
  void thread_end(std::uint32_t thread) override;
  void alloc(const trace::AllocEvent& a) override;
  void move(const trace::MoveEvent& m) override;
  void free(const trace::FreeEvent& f) override;
  void resize(const trace::ResizeEvent& r) override;
  void gc_begin(const trace::GcEvent& g) override;
  void gc_end(const trace::GcEvent& g) override;
  void bitmap_words(std::uint32_t space, std::uint64_t epoch,
                    std::span<const std::pair<std::uint64_t, std::uint64_t>> index_word) override;
  void stale(const trace::StaleEvent& s) override;
  void path(const trace::PathEvent& p) override;
  void end(std::uint64_t epoch, std::uint64_t bytes_allocated) override;
  void chunk_end(std::uint64_t bytes) override;

 private:
  OBJPROF_ALWAYS_INLINE RecordBatch::Record& add(RecordBatch::Record::Kind kind) {
    if (batch_->full()) [[unlikely]] next_batch();
    RecordBatch::Record& r = batch_->records.append();
    r.kind = kind;
    return r;
  }
  OBJPROF_NOINLINE void next_batch() { batch_ = handoff_(batch_); }
  static std::uint32_t index_of(std::size_t n) noexcept { return static_cast<std::uint32_t>(n); }

  RecordBatch* batch_;
  Handoff handoff_;
};

// Makes, on `v`, the calls the batch recorded, in order.
void replay(const RecordBatch& batch, trace::Visitor& v);

}  // namespace objprof::analysis::internal
