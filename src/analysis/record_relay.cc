#include "record_relay.h"

namespace objprof::analysis::internal {

using Record = RecordBatch::Record;

void RecordBatch::clear() noexcept {
  records.clear();
  headers.clear();
  types.clear();
  sites.clear();
  threads.clear();
  paths.clear();
  words.clear();
}

std::uint64_t RecordBatch::memory_bytes() const noexcept {
  // The side vectors' strings are few and small; their elements are counted, not their text.
  return records.capacity_bytes() + words.capacity() * sizeof(words[0]) + headers.capacity() * sizeof(trace::Header) +
         types.capacity() * sizeof(trace::TypeDef) + sites.capacity() * sizeof(trace::SiteDef) +
         threads.capacity() * sizeof(trace::ThreadDef) + paths.capacity() * sizeof(trace::PathEvent);
}

void Recorder::finish() {
  handoff_(batch_);
  batch_ = nullptr;
}

void Recorder::header(const trace::Header& h) {
  add(Record::kHeader).a = index_of(batch_->headers.size());
  batch_->headers.push_back(h);
}

void Recorder::type_def(const trace::TypeDef& t) {
  add(Record::kTypeDef).a = index_of(batch_->types.size());
  batch_->types.push_back(t);
}

void Recorder::site_def(const trace::SiteDef& s) {
  add(Record::kSiteDef).a = index_of(batch_->sites.size());
  batch_->sites.push_back(s);
}

void Recorder::thread_def(const trace::ThreadDef& t) {
  add(Record::kThreadDef).a = index_of(batch_->threads.size());
  batch_->threads.push_back(t);
}

void Recorder::thread_end(std::uint32_t thread) { add(Record::kThreadEnd).a = thread; }

void Recorder::alloc(const trace::AllocEvent& e) {
  Record& r = add(Record::kAlloc);
  r.a = e.thread;
  r.b = e.site;
  r.c = e.type;
  r.w = e.addr;
  r.x = e.size;
  r.y = e.epoch;
  r.z = e.bytes_clock;
}

void Recorder::move(const trace::MoveEvent& m) {
  Record& r = add(Record::kMove);
  r.flag = m.range;
  r.w = m.from;
  r.x = m.to;
  r.y = m.bytes;
  r.z = m.epoch;
}

void Recorder::free(const trace::FreeEvent& f) {
  Record& r = add(Record::kFree);
  r.flag = f.range;
  r.w = f.addr;
  r.x = f.epoch;
  r.y = f.bytes;
}

void Recorder::resize(const trace::ResizeEvent& e) {
  Record& r = add(Record::kResize);
  r.a = e.thread;
  r.w = e.addr;
  r.x = e.bytes;
  r.y = e.epoch;
}

void Recorder::gc_begin(const trace::GcEvent& g) {
  Record& r = add(Record::kGcBegin);
  r.flag = static_cast<std::uint8_t>(g.kind);
  r.w = g.epoch;
  r.x = g.bytes_allocated;
}

void Recorder::gc_end(const trace::GcEvent& g) {
  Record& r = add(Record::kGcEnd);
  r.flag = static_cast<std::uint8_t>(g.kind);
  r.w = g.epoch;
  r.x = g.bytes_allocated;
}

void Recorder::bitmap_words(std::uint32_t space, std::uint64_t epoch, std::span<const std::pair<std::uint64_t, std::uint64_t>> words) {
  Record& r = add(Record::kBits);
  r.a = space;
  r.w = epoch;
  r.x = batch_->words.size();
  r.y = words.size();
  batch_->words.insert(batch_->words.end(), words.begin(), words.end());
}

void Recorder::stale(const trace::StaleEvent& s) {
  Record& r = add(Record::kStale);
  r.w = s.addr;
  r.x = s.last_access_epoch;
  r.y = s.epoch;
}

void Recorder::path(const trace::PathEvent& p) {
  add(Record::kPath).a = index_of(batch_->paths.size());
  batch_->paths.push_back(p);
}

void Recorder::end(std::uint64_t epoch, std::uint64_t bytes_allocated) {
  Record& r = add(Record::kEnd);
  r.w = epoch;
  r.x = bytes_allocated;
}

void Recorder::chunk_end(std::uint64_t bytes) { add(Record::kChunkEnd).w = bytes; }

void replay(const RecordBatch& batch, trace::Visitor& v) {
  for (const Record& r : batch.records) {
    switch (r.kind) {
      case Record::kHeader: v.header(batch.headers[r.a]); break;
      case Record::kTypeDef: v.type_def(batch.types[r.a]); break;
      case Record::kSiteDef: v.site_def(batch.sites[r.a]); break;
      case Record::kThreadDef: v.thread_def(batch.threads[r.a]); break;
      case Record::kThreadEnd: v.thread_end(r.a); break;
      case Record::kAlloc: {
        trace::AllocEvent e;
        e.thread = r.a;
        e.site = r.b;
        e.type = r.c;
        e.addr = r.w;
        e.size = r.x;
        e.epoch = r.y;
        e.bytes_clock = r.z;
        v.alloc(e);
        break;
      }
      case Record::kMove: v.move(trace::MoveEvent{r.w, r.x, r.y, r.z, r.flag != 0}); break;
      case Record::kFree: v.free(trace::FreeEvent{r.w, r.x, r.y, r.flag != 0}); break;
      case Record::kResize: v.resize(trace::ResizeEvent{r.a, r.w, r.x, r.y}); break;
      case Record::kGcBegin: v.gc_begin(trace::GcEvent{r.w, static_cast<trace::GcKind>(r.flag), r.x}); break;
      case Record::kGcEnd: v.gc_end(trace::GcEvent{r.w, static_cast<trace::GcKind>(r.flag), r.x}); break;
      case Record::kBits:
        v.bitmap_words(r.a, r.w, std::span<const std::pair<std::uint64_t, std::uint64_t>>(batch.words.data() + r.x, r.y));
        break;
      case Record::kStale: v.stale(trace::StaleEvent{r.w, r.x, r.y}); break;
      case Record::kPath: v.path(batch.paths[r.a]); break;
      case Record::kEnd: v.end(r.w, r.x); break;
      case Record::kChunkEnd: v.chunk_end(r.w); break;
    }
  }
}

}  // namespace objprof::analysis::internal
