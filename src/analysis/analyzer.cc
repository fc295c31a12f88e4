// Analyzer (one thread) and analyze()/analyze_file() (options.workers): both run the front
// half (analyzer_front.h: decode, definitions, new objects) and the back half
// (analyzer_back.h: address map, GCs, access bits) over EventBatches. With one worker
// everything runs on the calling thread; with more, the reader and the front run on a thread
// of their own, a few batches ahead of the back, whose shards run on the workers; from three
// workers, the reader runs on a thread of its own too, a few record batches ahead of the front
// (record_relay.h).
#include "objprof/analysis/analyzer.h"

#include "analyzer_back.h"
#include "analyzer_front.h"
#include "crew.h"
#include "record_relay.h"

#include "objprof/profiler.h"

#include <fmt/core.h>
#include <tbb/concurrent_queue.h>

#include <sys/stat.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <functional>
#include <thread>

namespace objprof::analysis {

std::string site_label(const Site& s) {
  if (!s.defined) return fmt::format("site#{}", s.id);
  // A site that is a source location already ("leak.lua:12") has no bytecode offset.
  if (s.bytecode_offset == SiteInfo::kNoOffset) return s.method;
  return fmt::format("{}@{}", s.method, s.bytecode_offset);
}

namespace {

// The staleness rule's per-clock thresholds and the latest full GC, over the epochs whose
// access bits exist (before end_epoch).
void busiest_epochs(TraceAnalysis& a) {
  const std::uint32_t judged_end = std::min<std::uint32_t>(a.end_epoch, static_cast<std::uint32_t>(a.gcs.size()));
  for (std::uint32_t e = 0; e < judged_end; ++e) {
    const std::uint64_t before = e > 0 ? a.gc_clock(e - 1) : 0;
    if (a.gc_clock(e) > before) a.busiest_epoch_bytes = std::max(a.busiest_epoch_bytes, a.gc_clock(e) - before);
    if (a.gcs[e].kind != trace::GcKind::kMinor) a.last_full_gc = e;
  }
  for (Thread& th : a.threads) {
    std::uint64_t before = 0;
    for (const auto& [epoch, bytes] : th.progress) {
      if (epoch >= a.end_epoch) break;
      th.busiest_epoch_bytes = std::max(th.busiest_epoch_bytes, bytes - before);
      before = bytes;
    }
  }
}

// Completes the analysis once both halves are done.
Result<TraceAnalysis> conclude(TraceAnalysis& a, internal::Front& front, internal::Back& back, const trace::ReadSummary& summary,
                               std::size_t batches, std::uint64_t relay_bytes = 0) {
  if (front.too_many_objects())
    return make_error(ErrorCode::kUnsupported, fmt::format("the trace has more than {} objects, the analyzer's limit", kNoIndex - 1));
  if (back.finish()) a.warnings.push_back(fmt::format("the trace stops inside the GC of epoch {}", back.epoch() - 1));
  if (!a.complete) {
    a.end_epoch = back.epoch();
    a.end_bytes = front.clock();
  } else if (a.end_epoch != back.epoch()) {
    a.warnings.push_back(fmt::format("the end record says epoch {} but the trace has {} GCs", a.end_epoch, back.epoch()));
    a.end_epoch = back.epoch();
  }
  busiest_epochs(a);
  a.truncated = summary.truncated;
  if (!summary.warning.empty()) a.warnings.insert(a.warnings.begin(), summary.warning);
  a.stats.chunks = summary.chunks;
  a.stats.records = summary.records;
  a.stats.trace_bytes = summary.bytes;
  if (a.stats.inferred_deaths)
    a.warnings.push_back(fmt::format("{} deaths inferred from address reuse (no free record)", a.stats.inferred_deaths));
  if (a.stats.unknown_frees || a.stats.unknown_moves)
    a.warnings.push_back(fmt::format("{} frees and {} moves named no live object", a.stats.unknown_frees, a.stats.unknown_moves));
  // The object store only grows, so its final size is its peak.
  a.peak_memory_bytes = a.objects.memory_bytes() + back.peak_bytes() + relay_bytes +
                        batches * (internal::EventList::capacity_bytes() + front.route_bytes_per_batch());
  return std::move(a);
}

unsigned workers_for(const AnalyzerOptions& options) {
  if (options.workers > 0) return options.workers;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? hw : 1;
}

// Everything on the calling thread: each full batch is applied as soon as the front hands it over.
template <class Read>
Result<TraceAnalysis> inline_analysis(const AnalyzerOptions& given, std::uint64_t input_bytes, Read read) {
  AnalyzerOptions options = given;
  options.parallel_bitmap_words = SIZE_MAX;  // one worker: no oneTBB loop either
  TraceAnalysis a;
  internal::EventBatch batch;
  internal::Back back(a, options, 1);
  internal::Front front(a, options, &batch, [&](internal::EventBatch* b) {
    back.apply(*b);
    b->clear();
    return b;
  });
  front.set_input_bytes(input_bytes);
  Result<trace::ReadSummary> summary = read(front);
  front.finish();
  if (!summary.ok()) return summary.error();
  return conclude(a, front, back, *summary, 1);
}

// Shards per worker (the total rounded up to a power of two): more shards than threads, so
// that a phase is shared out in small tasks among whichever threads are running (a
// descheduled thread holds up one small task at most).
constexpr unsigned kShardsPerWorker = 4;

// Takes the next item of `q`, doing the crew's tasks meanwhile; whoever pushes to `q` pokes
// the crew afterwards, so that a thread waiting here wakes.
template <class T>
T* take_helping(tbb::concurrent_bounded_queue<T*>& q, internal::Crew& crew) {
  T* item = nullptr;
  for (;;) {
    const std::uint32_t seen = crew.signal();
    if (q.try_pop(item)) return item;
    if (!crew.help()) crew.wait(seen);
  }
}

// From this many workers, the reader and the front run on two threads (record_relay.h).
constexpr unsigned kRelayWorkers = 3;

// The reader and the front on a thread of their own (from kRelayWorkers workers, on two), the
// back on the calling one; the other workers are the crew's helpers. Batches circulate
// through pairs of queues (full ones onward, empty ones back), so memory stays at a few
// batches whatever the trace size. The back's shard tasks are taken by the calling thread,
// the helpers, and the reader and the front whenever they would otherwise wait for an empty
// batch: the work of N workers runs on N threads.
template <class Read>
Result<TraceAnalysis> pipelined(const AnalyzerOptions& options, std::uint64_t input_bytes, Read read) {
  const unsigned workers = workers_for(options);
  if (workers == 1) return inline_analysis(options, input_bytes, read);
  const bool relay = workers >= kRelayWorkers;
  constexpr int kBatches = 8, kRecordBatches = 4;
  static_assert(kBatches <= internal::Back::kQueueSlots);
  std::vector<std::unique_ptr<internal::EventBatch>> pool;
  tbb::concurrent_bounded_queue<internal::EventBatch*> full, empty;
  for (int i = 0; i < kBatches; ++i) {
    pool.push_back(std::make_unique<internal::EventBatch>());
    empty.push(pool.back().get());
  }
  std::vector<std::unique_ptr<internal::RecordBatch>> record_pool;
  tbb::concurrent_bounded_queue<internal::RecordBatch*> recorded, replayed;
  if (relay)
    for (int i = 0; i < kRecordBatches; ++i) {
      record_pool.push_back(std::make_unique<internal::RecordBatch>());
      replayed.push(record_pool.back().get());
    }
  const unsigned shards = internal::shard_count(workers * kShardsPerWorker);
  internal::Crew crew(workers - (relay ? 3 : 2));
  TraceAnalysis a;
  internal::EventBatch* first = nullptr;
  empty.pop(first);
  internal::Front front(
      a, options, first,
      [&](internal::EventBatch* b) {
        full.push(b);
        crew.poke();  // the back may be waiting for it
        return take_helping(empty, crew);
      },
      shards);
  front.set_input_bytes(input_bytes);
  internal::Back back(a, options, shards, &crew);
  std::optional<Result<trace::ReadSummary>> summary;
  std::uint64_t relay_bytes = 0;
  const auto read_relayed = [&] {
    internal::RecordBatch* first_records = nullptr;
    replayed.pop(first_records);
    internal::Recorder recorder(first_records, [&](internal::RecordBatch* b) {
      recorded.push(b);
      crew.poke();
      return take_helping(replayed, crew);
    });
    std::thread decoder([&] {
      summary.emplace(read(recorder));
      recorder.finish();
      recorded.push(nullptr);  // end of the records
      crew.poke();
    });
    std::uint64_t peak = 0;
    while (internal::RecordBatch* b = take_helping(recorded, crew)) {
      peak = std::max(peak, b->memory_bytes());
      internal::replay(*b, front);
      b->clear();
      replayed.push(b);
      crew.poke();
    }
    decoder.join();
    relay_bytes = peak * kRecordBatches;
  };
  std::thread reader([&] {
    if (relay) read_relayed();
    else summary.emplace(read(front));
    front.finish();
    full.push(nullptr);  // end of stream
    crew.poke();
  });
  // Whichever thread finishes a batch hands it back to the front (which may be waiting for it).
  const std::function<void(internal::EventBatch*)> applied = [&](internal::EventBatch* b) {
    b->clear();
    empty.push(b);
    crew.poke();
  };
  while (internal::EventBatch* b = take_helping(full, crew)) back.submit(b, applied);
  back.drain();
  reader.join();
  if (!summary->ok()) return summary->error();
  return conclude(a, front, back, **summary, kBatches, relay_bytes);
}

}  // namespace

struct Analyzer::State {
  explicit State(AnalyzerOptions o)
      : opt(std::move(o)),
        back(a, opt),
        front(a, opt, &batch, [this](internal::EventBatch* b) {
          back.apply(*b);
          b->clear();
          return b;
        }) {}
  AnalyzerOptions opt;
  TraceAnalysis a;
  internal::EventBatch batch;
  internal::Back back;
  internal::Front front;
};

Analyzer::Analyzer(AnalyzerOptions options) : s_(std::make_unique<State>(std::move(options))) {}
Analyzer::~Analyzer() = default;

void Analyzer::set_input_bytes(std::uint64_t bytes) noexcept { s_->front.set_input_bytes(bytes); }
trace::Visitor& Analyzer::visitor() noexcept { return s_->front; }

Result<TraceAnalysis> Analyzer::take(const trace::ReadSummary& summary) {
  s_->front.finish();
  return conclude(s_->a, s_->front, s_->back, summary, 1);
}

Result<TraceAnalysis> analyze(std::span<const std::byte> data, const AnalyzerOptions& options) {
  return pipelined(options, data.size(), [&](trace::Visitor& v) { return trace::read(data, v); });
}

Result<TraceAnalysis> analyze_file(const std::string& path, const AnalyzerOptions& options) {
  struct stat st {};
  const std::uint64_t bytes = ::stat(path.c_str(), &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
  return pipelined(options, bytes, [&](trace::Visitor& v) { return trace::read_file(path, v); });
}

}  // namespace objprof::analysis
