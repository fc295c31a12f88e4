// The analyzer's record handlers. The order rules (bits before moves and deaths, moves as one
// batch, allocations during a GC after it) are explained in analyzer.h.
#include "objprof/analysis/analyzer.h"

#include "address_map.h"

#include <fmt/core.h>
#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <unordered_map>
#include <vector>

namespace objprof::analysis {

std::string site_label(const Site& s) {
  if (!s.defined) return fmt::format("site#{}", s.id);
  return fmt::format("{}@{}", s.method, s.bytecode_offset);
}

namespace {

struct PendingOp {
  enum Kind : std::uint8_t { kFree, kMove, kRange } kind;
  std::uint64_t from, to, bytes;
};

struct Relocation {
  ObjectId id;
  std::uint64_t to;
};

// A tiny direct-mapped cache in front of the (site, type, thread) interning table: almost
// every allocation repeats a recent triple.
struct ContextCacheEntry {
  std::uint32_t site = 0, type = 0, thread = 0, ctx = kNoIndex;
};

struct TripleHash {
  std::size_t operator()(const std::array<std::uint32_t, 3>& k) const noexcept {
    std::uint64_t h = (std::uint64_t{k[0]} * 0x9E37'79B9'7F4A'7C15ull) ^ (std::uint64_t{k[1]} * 0xC2B2'AE3D'27D4'EB4Full) ^
                      (std::uint64_t{k[2]} * 0x1656'67B1'9E37'79F9ull);
    return static_cast<std::size_t>(h ^ (h >> 29));
  }
};

}  // namespace

struct Analyzer::State {
  AnalyzerOptions opt;
  TraceAnalysis a;
  internal::AddressMap map;
  std::uint32_t epoch = 0;
  bool in_gc = false;
  bool too_many_objects = false;
  std::uint64_t clock = 0;  // bytes allocated, as far as the trace has told

  struct SpaceBase {
    std::uint32_t id;
    std::uint64_t begin;
  };
  std::vector<SpaceBase> spaces;
  std::uint32_t log2_granule = 3;

  std::vector<PendingOp> ops;
  std::vector<trace::AllocEvent> gc_allocs;
  std::vector<std::uint64_t> stale_addrs;
  std::vector<Relocation> relocs;

  std::unordered_map<std::array<std::uint32_t, 3>, std::uint32_t, TripleHash> ctx_index;
  std::array<ContextCacheEntry, 64> ctx_cache{};

  std::uint64_t input_bytes = 0, processed = 0, next_progress = 0;

  // --- definitions ---
  std::uint32_t site_idx(std::uint32_t id) {
    auto [it, fresh] = a.site_index.try_emplace(id, static_cast<std::uint32_t>(a.sites.size()));
    if (fresh) a.sites.push_back(Site{id, 0, 0, {}, false});
    return it->second;
  }
  std::uint32_t type_idx(std::uint32_t id) {
    auto [it, fresh] = a.type_index.try_emplace(id, static_cast<std::uint32_t>(a.types.size()));
    if (fresh) a.types.push_back(Type{id, 0, false, {}, false});
    return it->second;
  }
  std::uint32_t thread_idx(std::uint32_t id) {
    auto [it, fresh] = a.thread_index.try_emplace(id, static_cast<std::uint32_t>(a.threads.size()));
    if (fresh) {
      Thread t;
      t.id = id;
      t.attach_epoch = epoch;
      t.attach_bytes = clock;
      a.threads.push_back(std::move(t));
    }
    return it->second;
  }
  std::uint32_t context(std::uint32_t site, std::uint32_t type, std::uint32_t thread) {
    const std::size_t slot = (site * 31u + type * 7u + thread) & (ctx_cache.size() - 1);
    ContextCacheEntry& c = ctx_cache[slot];
    if (c.ctx != kNoIndex && c.site == site && c.type == type && c.thread == thread) return c.ctx;
    auto [it, fresh] = ctx_index.try_emplace({site, type, thread}, static_cast<std::uint32_t>(a.contexts.size()));
    if (fresh) a.contexts.push_back(AllocContext{site_idx(site), type_idx(type), thread_idx(thread)});
    c = {site, type, thread, it->second};
    return it->second;
  }

  // --- objects ---
  void kill(ObjectId id, std::uint32_t at) {
    a.objects.set_dead(id, at);
    const std::uint64_t size = a.objects.size_of(id);
    --a.live_objects;
    a.live_bytes -= size;
    if (at < a.gcs.size()) {
      ++a.gcs[at].freed_objects;
      a.gcs[at].freed_bytes += size;
    }
  }

  // The previous occupant of an address that a new object (or a moved one) now takes had no
  // free record: it died at the latest GC it could have died in.
  void infer_death(ObjectId prev, std::uint32_t at) {
    at = std::max(at, a.objects.birth_epoch(prev));
    kill(prev, at);
    a.objects.add_flags(prev, kDeathInferred);
    ++a.stats.inferred_deaths;
  }

  void place_new(const trace::AllocEvent& e, std::uint8_t flags, std::uint32_t infer_at) {
    if (a.objects.size() >= kNoIndex - 1) {
      too_many_objects = true;
      return;
    }
    const std::uint32_t ctx = context(e.site, e.type, e.thread);
    const ObjectId id = a.objects.add(ctx, e.size, e.addr, static_cast<std::uint32_t>(e.epoch), e.bytes_clock, flags);
    a.total_bytes += e.size;
    ++a.live_objects;
    a.live_bytes += e.size;
    a.stats.peak_live_objects = std::max(a.stats.peak_live_objects, a.live_objects);
    const std::uint32_t prev = map.put(e.addr, id);
    if (prev != internal::AddressMap::kMissing) infer_death(prev, infer_at);
  }

  // --- access bits ---
  void resolve_bits(std::uint64_t begin, std::uint32_t e, std::span<const std::pair<std::uint64_t, std::uint64_t>> words) {
    const unsigned lg = log2_granule;
    if (words.size() < opt.parallel_bitmap_words) {
      for (auto [idx, word] : words) {
        while (word) {
          const unsigned b = static_cast<unsigned>(__builtin_ctzll(word));
          word &= word - 1;
          const std::uint32_t id = map.find(begin + ((idx * 64 + b) << lg));
          if (id == internal::AddressMap::kMissing) {
            ++a.stats.unresolved_bits;
          } else {
            ++a.stats.resolved_bits;
            a.objects.mark_accessed(id, e);
          }
        }
      }
      return;
    }
    // Large dump: resolve in parallel. The map is read-only here and each object appears at
    // most once per epoch (one bit per object start), so the inline run updates touch distinct
    // objects; the rare gap (a new run in the side array) is appended afterwards.
    struct Local {
      std::uint64_t resolved = 0, unresolved = 0;
      std::vector<ObjectId> gaps;
    };
    tbb::enumerable_thread_specific<Local> locals;
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, words.size(), 1024), [&](const tbb::blocked_range<std::size_t>& r) {
      Local& l = locals.local();
      for (std::size_t i = r.begin(); i != r.end(); ++i) {
        auto [idx, word] = words[i];
        while (word) {
          const unsigned b = static_cast<unsigned>(__builtin_ctzll(word));
          word &= word - 1;
          const std::uint32_t id = map.find(begin + ((idx * 64 + b) << lg));
          if (id == internal::AddressMap::kMissing) {
            ++l.unresolved;
          } else {
            ++l.resolved;
            if (!a.objects.try_extend_access(id, e)) l.gaps.push_back(id);
          }
        }
      }
    });
    for (Local& l : locals) {
      a.stats.resolved_bits += l.resolved;
      a.stats.unresolved_bits += l.unresolved;
      for (ObjectId id : l.gaps) a.objects.start_run(id, e);
    }
  }

  // --- a GC's moves and deaths, as one batch ---
  void take_range(const PendingOp& op) {
    const std::uint64_t end = op.from + op.bytes;
    const std::uint64_t delta = op.to - op.from;  // modular: also right for moves down
    const std::uint64_t granules = op.bytes >> log2_granule;
    const std::size_t before = relocs.size();
    if (granules <= 4 * static_cast<std::uint64_t>(map.size()) + 64) {
      for (std::uint64_t addr = op.from; addr < end; addr += std::uint64_t{1} << log2_granule) {
        const std::uint32_t id = map.erase(addr);
        if (id != internal::AddressMap::kMissing) relocs.push_back({id, addr + delta});
      }
    } else {
      std::vector<std::pair<std::uint64_t, ObjectId>> inside;
      map.for_each([&](std::uint64_t addr, std::uint32_t id) {
        if (addr >= op.from && addr < end) inside.emplace_back(addr, id);
      });
      for (auto [addr, id] : inside) {
        map.erase(addr);
        relocs.push_back({id, addr + delta});
      }
    }
    if (relocs.size() == before) ++a.stats.unknown_moves;
  }

  void apply_gc(std::uint32_t e) {
    relocs.clear();
    // Pass 1: every source in the pre-GC heap.
    for (const PendingOp& op : ops) {
      switch (op.kind) {
        case PendingOp::kFree: {
          const std::uint32_t id = map.erase(op.from);
          if (id == internal::AddressMap::kMissing) ++a.stats.unknown_frees;
          else kill(id, e);
          break;
        }
        case PendingOp::kMove: {
          const std::uint32_t id = map.erase(op.from);
          if (id == internal::AddressMap::kMissing) ++a.stats.unknown_moves;
          else relocs.push_back({id, op.to});
          break;
        }
        case PendingOp::kRange: take_range(op); break;
      }
    }
    // Pass 2: every destination.
    for (const Relocation& r : relocs) {
      if (r.to == 0) {  // a move to address 0 cannot be represented; the object is lost
        ++a.stats.unknown_moves;
        kill(r.id, e);
        continue;
      }
      const std::uint32_t prev = map.put(r.to, r.id);
      if (prev != internal::AddressMap::kMissing) infer_death(prev, e);
      a.objects.add_move(r.id, e, r.to);
      if (e < a.gcs.size()) ++a.gcs[e].moved_objects;
    }
    ops.clear();
    // Allocations made while the GC ran.
    for (const trace::AllocEvent& al : gc_allocs) place_new(al, kBornDuringGc, e);
    gc_allocs.clear();
    // Online leak reports name post-GC addresses.
    for (std::uint64_t addr : stale_addrs) {
      const std::uint32_t id = map.find(addr);
      if (id != internal::AddressMap::kMissing) a.objects.add_flags(id, kReportedStale);
    }
    stale_addrs.clear();
  }

  std::uint64_t memory_now() const {
    return a.objects.memory_bytes() + map.memory_bytes() + ops.capacity() * sizeof(PendingOp) +
           relocs.capacity() * sizeof(Relocation) + gc_allocs.capacity() * sizeof(trace::AllocEvent);
  }

  void advance(std::uint64_t bytes) {
    processed += bytes;
    if (opt.progress && input_bytes > 0 && processed >= next_progress) {
      next_progress = processed + std::max<std::uint64_t>(input_bytes / 200, 1 << 20);
      opt.progress(std::min(1.0, static_cast<double>(processed) / static_cast<double>(input_bytes)));
    }
  }
};

Analyzer::Analyzer(AnalyzerOptions options) : s_(std::make_unique<State>()) { s_->opt = std::move(options); }
Analyzer::~Analyzer() = default;

void Analyzer::set_input_bytes(std::uint64_t bytes) noexcept { s_->input_bytes = bytes; }

void Analyzer::header(const trace::Header& h) {
  s_->a.header = h;
  s_->log2_granule = static_cast<std::uint32_t>(__builtin_ctz(h.granule_bytes));
  for (const auto& sp : h.spaces) s_->spaces.push_back({sp.id, sp.begin});
}

void Analyzer::type_def(const trace::TypeDef& t) {
  Type& ty = s_->a.types[s_->type_idx(t.id)];
  ty.instance_size = t.instance_size;
  ty.is_array = t.is_array;
  ty.name = t.name;
  ty.defined = true;
}

void Analyzer::site_def(const trace::SiteDef& s) {
  Site& si = s_->a.sites[s_->site_idx(s.id)];
  si.pc = s.pc;
  si.bytecode_offset = s.bytecode_offset;
  si.method = s.method;
  si.defined = true;
}

void Analyzer::thread_def(const trace::ThreadDef& t) {
  Thread& th = s_->a.threads[s_->thread_idx(t.id)];
  if (!th.defined) {
    th.attach_epoch = s_->epoch;
    th.attach_bytes = s_->clock;
  }
  th.name = t.name;
  th.defined = true;
  th.end_epoch = kNoEpoch;  // a thread id attached again runs again
}

void Analyzer::thread_end(std::uint32_t thread) {
  Thread& th = s_->a.threads[s_->thread_idx(thread)];
  th.end_epoch = s_->epoch;
  th.end_bytes = s_->clock;
}

void Analyzer::alloc(const trace::AllocEvent& e) {
  State& s = *s_;
  ++s.a.stats.allocs;
  s.clock = std::max(s.clock, e.bytes_clock + e.size);
  s.advance(trace::kAllocBytes);
  if (s.in_gc) {
    ++s.a.stats.allocs_during_gc;
    s.gc_allocs.push_back(e);
    return;
  }
  s.place_new(e, 0, s.epoch > 0 ? s.epoch - 1 : 0);
}

void Analyzer::move(const trace::MoveEvent& m) {
  State& s = *s_;
  if (m.range) ++s.a.stats.move_ranges;
  else ++s.a.stats.moves;
  s.advance(m.range ? trace::kMoveRangeBytes : trace::kMoveBytes);
  s.ops.push_back({m.range ? PendingOp::kRange : PendingOp::kMove, m.from, m.to, m.bytes});
  if (!s.in_gc) s.apply_gc(s.epoch);  // not produced by the profiler; applied at once
}

void Analyzer::free(const trace::FreeEvent& f) {
  State& s = *s_;
  ++s.a.stats.frees;
  s.advance(trace::kFreeBytes);
  s.ops.push_back({PendingOp::kFree, f.addr, 0, 0});
  if (!s.in_gc) s.apply_gc(s.epoch);
}

void Analyzer::gc_begin(const trace::GcEvent& g) {
  State& s = *s_;
  s.advance(18);
  s.in_gc = true;
  GcRecord r;
  r.epoch = static_cast<std::uint32_t>(g.epoch);
  r.kind = g.kind;
  r.bytes_begin = g.bytes_allocated;
  s.clock = std::max(s.clock, g.bytes_allocated);
  s.a.gcs.push_back(r);
}

void Analyzer::gc_end(const trace::GcEvent& g) {
  State& s = *s_;
  s.advance(17);
  s.apply_gc(s.epoch);
  GcRecord& r = s.a.gcs.back();
  r.ended = true;
  r.bytes_end = g.bytes_allocated;
  r.live_objects_after = s.a.live_objects;
  r.live_bytes_after = s.a.live_bytes;
  s.clock = std::max(s.clock, g.bytes_allocated);
  s.a.peak_memory_bytes = std::max(s.a.peak_memory_bytes, s.memory_now());
  s.in_gc = false;
  ++s.epoch;
}

void Analyzer::bitmap_words(std::uint32_t space, std::uint64_t epoch,
                            std::span<const std::pair<std::uint64_t, std::uint64_t>> words) {
  State& s = *s_;
  s.advance(16 * words.size() + 16);
  std::uint64_t begin = 0;
  bool found = false;
  for (const auto& sp : s.spaces)
    if (sp.id == space) {
      begin = sp.begin;
      found = true;
    }
  if (!found) return;  // the reader refuses bitmaps of undeclared spaces
  std::uint64_t bits = 0;
  for (auto [idx, word] : words) bits += static_cast<std::uint64_t>(__builtin_popcountll(word));
  s.a.stats.marked_bits += bits;
  if (s.in_gc && !s.a.gcs.empty()) s.a.gcs.back().marked_bits += bits;
  s.resolve_bits(begin, static_cast<std::uint32_t>(epoch), words);
}

void Analyzer::stale(const trace::StaleEvent& e) {
  State& s = *s_;
  ++s.a.stats.stale_records;
  if (s.in_gc) {
    s.stale_addrs.push_back(e.addr);
  } else {
    const std::uint32_t id = s.map.find(e.addr);
    if (id != internal::AddressMap::kMissing) s.a.objects.add_flags(id, kReportedStale);
  }
}

void Analyzer::end(std::uint64_t epoch, std::uint64_t bytes_allocated) {
  State& s = *s_;
  s.a.complete = true;
  s.a.end_epoch = static_cast<std::uint32_t>(std::min<std::uint64_t>(epoch, kNoEpoch - 1));
  s.a.end_bytes = bytes_allocated;
  s.clock = std::max(s.clock, bytes_allocated);
}

Result<TraceAnalysis> Analyzer::take(const trace::ReadSummary& summary) {
  State& s = *s_;
  if (s.too_many_objects)
    return make_error(ErrorCode::kUnsupported, fmt::format("the trace has more than {} objects, the analyzer's limit", kNoIndex - 1));
  TraceAnalysis& a = s.a;
  if (s.in_gc) {
    // The trace stops inside GC e: its bits were dumped (epoch e is known), its moves and
    // frees so far are applied, but it never finished.
    s.apply_gc(s.epoch);
    a.warnings.push_back(fmt::format("the trace stops inside the GC of epoch {}", s.epoch));
    s.in_gc = false;
    ++s.epoch;
  }
  if (!a.complete) {
    a.end_epoch = s.epoch;
    a.end_bytes = s.clock;
  } else if (a.end_epoch != s.epoch) {
    a.warnings.push_back(fmt::format("the end record says epoch {} but the trace has {} GCs", a.end_epoch, s.epoch));
    a.end_epoch = s.epoch;
  }
  a.truncated = summary.truncated;
  if (!summary.warning.empty()) a.warnings.insert(a.warnings.begin(), summary.warning);
  a.stats.chunks = summary.chunks;
  a.stats.records = summary.records;
  a.stats.trace_bytes = summary.bytes;
  if (a.stats.inferred_deaths)
    a.warnings.push_back(fmt::format("{} deaths inferred from address reuse (no free record)", a.stats.inferred_deaths));
  if (a.stats.unknown_frees || a.stats.unknown_moves)
    a.warnings.push_back(fmt::format("{} frees and {} moves named no live object", a.stats.unknown_frees, a.stats.unknown_moves));
  a.peak_memory_bytes = std::max(a.peak_memory_bytes, s.memory_now());
  if (s.opt.progress) s.opt.progress(1.0);
  return std::move(a);
}

Result<TraceAnalysis> analyze(std::span<const std::byte> data, const AnalyzerOptions& options) {
  Analyzer an(options);
  an.set_input_bytes(data.size());
  auto r = trace::read(data, an);
  if (!r.ok()) return r.error();
  return an.take(*r);
}

Result<TraceAnalysis> analyze_file(const std::string& path, const AnalyzerOptions& options) {
  Analyzer an(options);
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) an.set_input_bytes(static_cast<std::uint64_t>(st.st_size));
  auto r = trace::read_file(path, an);
  if (!r.ok()) return r.error();
  return an.take(*r);
}

}  // namespace objprof::analysis
