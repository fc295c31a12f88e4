#include "analyzer_front.h"

#include <fmt/core.h>

#include <algorithm>

namespace objprof::analysis::internal {

Front::Front(TraceAnalysis& a, const AnalyzerOptions& options, EventBatch* first, Handoff handoff, unsigned shards)
    : a_(a), opt_(options), batch_(first), handoff_(std::move(handoff)), shards_(shard_count(shards)) {
  prepare_batch();
}

void Front::finish() {
  handoff_(batch_);
  batch_ = nullptr;
  if (opt_.progress) opt_.progress(1.0);
}

void Front::chunk_end(std::uint64_t bytes) {
  processed_ += bytes;
  if (opt_.progress && input_bytes_ > 0 && processed_ >= next_progress_) {
    next_progress_ = processed_ + std::max<std::uint64_t>(input_bytes_ / 200, 1 << 20);
    opt_.progress(std::min(1.0, static_cast<double>(processed_) / static_cast<double>(input_bytes_)));
  }
}

std::uint32_t Front::site_idx(std::uint32_t id) {
  auto [it, fresh] = a_.site_index.try_emplace(id, static_cast<std::uint32_t>(a_.sites.size()));
  if (fresh) a_.sites.push_back(Site{id, 0, 0, {}, false});
  return it->second;
}

std::uint32_t Front::type_idx(std::uint32_t id) {
  auto [it, fresh] = a_.type_index.try_emplace(id, static_cast<std::uint32_t>(a_.types.size()));
  if (fresh) a_.types.push_back(Type{id, 0, false, {}, false});
  return it->second;
}

std::uint32_t Front::thread_idx(std::uint32_t id) {
  auto [it, fresh] = a_.thread_index.try_emplace(id, static_cast<std::uint32_t>(a_.threads.size()));
  if (fresh) {
    Thread t;
    t.id = id;
    t.attach_epoch = epoch_;
    t.attach_bytes = clock_;
    a_.threads.push_back(std::move(t));
  }
  return it->second;
}

std::uint32_t Front::context_slow(CacheEntry& c, std::uint32_t site, std::uint32_t type, std::uint32_t thread) {
  auto [it, fresh] = ctx_index_.try_emplace({site, type, thread}, static_cast<std::uint32_t>(a_.contexts.size()));
  if (fresh) a_.contexts.push_back(AllocContext{site_idx(site), type_idx(type), thread_idx(thread)});
  c = {site, type, thread, it->second};
  return it->second;
}

void Front::header(const trace::Header& h) {
  a_.header = h;
  for (const auto& sp : h.spaces) spaces_.push_back({sp.id, sp.begin});
}

void Front::type_def(const trace::TypeDef& t) {
  Type& ty = a_.types[type_idx(t.id)];
  ty.instance_size = t.instance_size;
  ty.is_array = t.is_array;
  ty.name = t.name;
  ty.defined = true;
}

void Front::site_def(const trace::SiteDef& s) {
  Site& si = a_.sites[site_idx(s.id)];
  si.pc = s.pc;
  si.bytecode_offset = s.bytecode_offset;
  si.method = s.method;
  si.defined = true;
}

void Front::thread_def(const trace::ThreadDef& t) {
  Thread& th = a_.threads[thread_idx(t.id)];
  if (!th.defined) {
    th.attach_epoch = epoch_;
    th.attach_bytes = clock_;
  }
  th.name = t.name;
  th.defined = true;
  th.end_epoch = kNoEpoch;  // a thread id attached again runs again
}

void Front::thread_end(std::uint32_t thread) {
  Thread& th = a_.threads[thread_idx(thread)];
  th.end_epoch = epoch_;
  th.end_bytes = clock_;
}

void Front::alloc(const trace::AllocEvent& e) {
  ++a_.stats.allocs;
  clock_ = std::max(clock_, e.bytes_clock + e.size);
  if (a_.objects.size() >= kNoIndex - 1) {
    too_many_objects_ = true;
    return;
  }
  std::uint8_t flags = 0;
  if (in_gc_) {
    ++a_.stats.allocs_during_gc;
    flags = kBornDuringGc;
  }
  const std::uint32_t ctx = context(e.site, e.type, e.thread);
  add_progress(a_.threads[a_.contexts[ctx].thread], static_cast<std::uint32_t>(e.epoch), e.size);
  const ObjectId id = a_.objects.reserve(e.size);  // the back's shard writes its fields
  a_.total_bytes += e.size;
  Event& ev = emit_at(Event::kPlace, e.addr);
  ev.id = id;
  ev.y = e.size;
  ev.z = e.bytes_clock;
  ev.ctx = ctx;
  ev.epoch = static_cast<std::uint32_t>(e.epoch);
  ev.flags = flags;
}

void Front::move(const trace::MoveEvent& m) {
  if (m.range) ++a_.stats.move_ranges;
  else ++a_.stats.moves;
  Event& ev = m.range ? emit(Event::kRange) : emit_at(Event::kMove, m.from);
  if (!in_gc_) batch_->in_order = true;
  ev.id = op_seq_++;
  ev.x = m.from;
  ev.y = m.to;
  ev.z = m.bytes;
}

void Front::free(const trace::FreeEvent& f) {
  if (f.range) {
    ++a_.stats.free_ranges;
    Event& ev = emit(Event::kFreeRange);
    ev.id = op_seq_++;
    ev.x = f.addr;
    ev.z = f.bytes;
  } else {
    ++a_.stats.frees;
    emit_at(Event::kFree, f.addr).id = op_seq_++;
  }
  if (!in_gc_) batch_->in_order = true;
}

void Front::resize(const trace::ResizeEvent& r) {
  ++a_.stats.resizes;
  Event& ev = emit_at(Event::kResize, r.addr);
  ev.y = r.bytes;
}

void Front::gc_begin(const trace::GcEvent& g) {
  in_gc_ = true;
  op_seq_ = 0;
  clock_ = std::max(clock_, g.bytes_allocated);
  Event& ev = emit(Event::kGcBegin);
  batch_->gc_begins.push_back(static_cast<std::uint32_t>(batch_->events.size() - 1));
  ev.gc_kind = static_cast<std::uint8_t>(g.kind);
  ev.x = g.epoch;
  ev.y = g.bytes_allocated;
}

void Front::gc_end(const trace::GcEvent& g) {
  in_gc_ = false;
  op_seq_ = 0;
  ++epoch_;
  clock_ = std::max(clock_, g.bytes_allocated);
  Event& ev = emit(Event::kGcEnd);
  ev.x = g.epoch;
  ev.y = g.bytes_allocated;
  // A GC end closes its batch: the back can then apply the whole batch on all its shards at
  // once (analyzer_back.h).
  next_batch();
}

void Front::bitmap_words(std::uint32_t space, std::uint64_t epoch, std::span<const std::pair<std::uint64_t, std::uint64_t>> words) {
  const auto sp = std::find_if(spaces_.begin(), spaces_.end(), [&](const SpaceBase& s) { return s.id == space; });
  if (sp == spaces_.end()) return;  // the reader refuses bitmaps of undeclared spaces
  const auto dump = [&](unsigned shard, std::span<const std::pair<std::uint64_t, std::uint64_t>> part) {
    Event& ev = emit_to(Event::kBits, shard);
    if (batch_->has_bits && batch_->bits_epoch != epoch) batch_->in_order = true;
    batch_->has_bits = true;
    batch_->bits_epoch = static_cast<std::uint32_t>(epoch);
    ev.id = static_cast<std::uint32_t>(epoch);
    ev.x = sp->begin;
    ev.y = batch_->words.size();
    ev.z = part.size();
    batch_->words.insert(batch_->words.end(), part.begin(), part.end());
  };
  if (shards_ == 1) {
    dump(0, words);
    return;
  }
  // One dump per shard, of the words in its windows (a word across two windows goes to both:
  // each shard then takes only its own bits of it).
  shard_words_.resize(shards_);
  for (auto& w : shard_words_) w.clear();
  const unsigned lg = log2_granule(a_.header.granule_bytes);
  std::uint64_t window = ~std::uint64_t{0};
  unsigned owner = 0;
  for (const auto& w : words) {
    const std::uint64_t first = sp->begin + ((w.first * 64) << lg), last = first + (std::uint64_t{63} << lg);
    if ((first >> kShardWindowBits) != window) {
      window = first >> kShardWindowBits;
      owner = shard_of(first, shards_);
    }
    shard_words_[owner].push_back(w);
    if ((last >> kShardWindowBits) != window)
      if (const unsigned o = shard_of(last, shards_); o != owner) shard_words_[o].push_back(w);
  }
  for (unsigned s = 0; s < shards_; ++s)
    if (!shard_words_[s].empty()) dump(s, shard_words_[s]);
}

void Front::stale(const trace::StaleEvent& s) {
  ++a_.stats.stale_records;
  emit_at(Event::kStale, s.addr);
}

void Front::path(const trace::PathEvent& p) {
  // Few (one per leaking site and type), and about the objects' post-GC addresses: kept as
  // they are, for the leak report; no event for the back half.
  ++a_.stats.path_records;
  a_.paths.push_back(p);
}

void Front::end(std::uint64_t epoch, std::uint64_t bytes_allocated) {
  a_.complete = true;
  a_.end_epoch = static_cast<std::uint32_t>(std::min<std::uint64_t>(epoch, kNoEpoch - 1));
  a_.end_bytes = bytes_allocated;
  clock_ = std::max(clock_, bytes_allocated);
}

}  // namespace objprof::analysis::internal
