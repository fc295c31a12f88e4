// TraceBuilder: writes hand-made traces record by record, in exactly the file order a test
// wants, through the real TraceWriter (so framing and checksums are the library's own). Every
// record is flushed as its own chunk on its stream, stamped with the current epoch; this is
// how tests put, say, an allocation of a concurrent GC between its bitmap and its frees.
#pragma once

#include <objprof/trace_format.h>
#include <objprof/trace_writer.h>

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace objprof::test {

class TraceBuilder {
 public:
  struct Space {
    std::uint32_t id;
    std::uint64_t begin, end;
    std::string name;
  };

  explicit TraceBuilder(std::vector<Space> spaces = {{0, 0x10000, 0x20000, "heap"}}, std::uint32_t granule = 8,
                        std::size_t chunk_payload = 4096)
      : spaces_(std::move(spaces)), granule_(granule) {
    auto sink = std::make_unique<MemorySink>();
    sink_ = sink.get();
    auto w = TraceWriter::create(std::move(sink), chunk_payload);
    REQUIRE(w.ok());
    writer_ = std::move(*w);
    control_ = writer_->make_buffer(trace::kControlStream);
    collector_ = writer_->make_buffer(trace::kCollectorStream);
    std::size_t n = 1 + 4 + 2;
    for (const Space& s : spaces_) n += 4 + 8 + 8 + EventBuffer::string_bytes(s.name);
    std::uint8_t* p = control_->begin_record(n);
    p = EventBuffer::put_u8(p, static_cast<std::uint8_t>(trace::Tag::kHeader));
    p = EventBuffer::put_u32(p, granule_);
    p = EventBuffer::put_u16(p, static_cast<std::uint16_t>(spaces_.size()));
    for (const Space& s : spaces_) {
      p = EventBuffer::put_u32(p, s.id);
      p = EventBuffer::put_u64(p, s.begin);
      p = EventBuffer::put_u64(p, s.end);
      p = EventBuffer::put_string(p, s.name);
    }
    control_->flush();
  }

  std::uint64_t epoch() const { return epoch_; }

  void type(std::uint32_t id, const std::string& name, std::uint64_t size, bool array = false) {
    std::uint8_t* p = control_->begin_record(1 + 4 + 8 + 1 + EventBuffer::string_bytes(name));
    p = EventBuffer::put_u8(p, static_cast<std::uint8_t>(trace::Tag::kTypeDef));
    p = EventBuffer::put_u32(p, id);
    p = EventBuffer::put_u64(p, size);
    p = EventBuffer::put_u8(p, array ? 1 : 0);
    EventBuffer::put_string(p, name);
    control_->flush();
  }
  void site(std::uint32_t id, const std::string& method, std::uint32_t bci, std::uint64_t pc = 0) {
    std::uint8_t* p = control_->begin_record(1 + 4 + 8 + 4 + EventBuffer::string_bytes(method));
    p = EventBuffer::put_u8(p, static_cast<std::uint8_t>(trace::Tag::kSiteDef));
    p = EventBuffer::put_u32(p, id);
    p = EventBuffer::put_u64(p, pc);
    p = EventBuffer::put_u32(p, bci);
    EventBuffer::put_string(p, method);
    control_->flush();
  }
  void thread(std::uint32_t id, const std::string& name) {
    std::uint8_t* p = control_->begin_record(1 + 4 + EventBuffer::string_bytes(name));
    p = EventBuffer::put_u8(p, static_cast<std::uint8_t>(trace::Tag::kThreadDef));
    p = EventBuffer::put_u32(p, id);
    EventBuffer::put_string(p, name);
    control_->flush();
  }
  void thread_end(std::uint32_t id) {
    std::uint8_t* p = control_->begin_record(1 + 4);
    p = EventBuffer::put_u8(p, static_cast<std::uint8_t>(trace::Tag::kThreadEnd));
    EventBuffer::put_u32(p, id);
    control_->flush();
  }
  // From now on, write the hot records in their fixed forms (as traces before version 5 hold
  // them) instead of the writer's packed ones, e.g. to test how an older version is read.
  void write_unpacked() { packed_ = false; }

  void alloc(std::uint32_t thread, std::uint32_t site, std::uint32_t type, std::uint64_t addr, std::uint64_t size) {
    EventBuffer& b = thread_buffer(thread);
    if (packed_) {
      b.alloc(site, type, addr, size);
    } else {
      std::uint8_t* p = b.begin_record(trace::kAllocBytes);
      p = EventBuffer::put_u8(p, static_cast<std::uint8_t>(trace::Tag::kAlloc));
      p = EventBuffer::put_u32(p, site);
      p = EventBuffer::put_u32(p, type);
      p = EventBuffer::put_u64(p, addr);
      EventBuffer::put_u64(p, size);
    }
    b.flush();
    bytes_ += size;
  }
  // The buffers themselves, for tests that put many records in one chunk (which the calls
  // above never do): records go in whatever chunks they fill; flush when done.
  EventBuffer& thread_stream(std::uint32_t thread) { return thread_buffer(thread); }
  EventBuffer& collector_stream() { return *collector_; }

  // Bytes written as they are, as one chunk of thread `thread`'s stream or of the collector
  // stream: records the writer would never produce.
  void raw_thread(std::uint32_t thread, const std::vector<std::uint8_t>& bytes) { raw(thread_buffer(thread), bytes); }
  void raw_collector(const std::vector<std::uint8_t>& bytes) { raw(*collector_, bytes); }
  void raw_control(const std::vector<std::uint8_t>& bytes) { raw(*control_, bytes); }

  void resize(std::uint32_t thread, std::uint64_t addr, std::uint64_t bytes) {
    EventBuffer& b = thread_buffer(thread);
    if (packed_) {
      b.resize(addr, bytes);
    } else {
      std::uint8_t* p = b.begin_record(trace::kResizeBytes);
      p = EventBuffer::put_u8(p, static_cast<std::uint8_t>(trace::Tag::kResize));
      p = EventBuffer::put_u64(p, addr);
      EventBuffer::put_u64(p, bytes);
    }
    b.flush();
  }
  void gc_begin(trace::GcKind kind = trace::GcKind::kFull) {
    std::uint8_t* p = control_->begin_record(1 + 8 + 1 + 8);
    p = EventBuffer::put_u8(p, static_cast<std::uint8_t>(trace::Tag::kGcBegin));
    p = EventBuffer::put_u64(p, epoch_);
    p = EventBuffer::put_u8(p, static_cast<std::uint8_t>(kind));
    EventBuffer::put_u64(p, bytes_);
    control_->flush();
  }
  // Marks the objects starting at these addresses (all in space `space`), sparse form.
  void bitmap(const std::vector<std::uint64_t>& addrs, std::uint32_t space = 0) {
    const Space& s = find_space(space);
    std::map<std::uint64_t, std::uint64_t> words;
    for (std::uint64_t a : addrs) {
      const std::uint64_t g = (a - s.begin) / granule_;
      words[g / 64] |= std::uint64_t{1} << (g % 64);
    }
    std::uint8_t* p = control_->begin_record(1 + 4 + 4 + 16 * words.size());
    p = EventBuffer::put_u8(p, static_cast<std::uint8_t>(trace::Tag::kBitmapSparse));
    p = EventBuffer::put_u32(p, space);
    p = EventBuffer::put_u32(p, static_cast<std::uint32_t>(words.size()));
    for (auto [i, w] : words) {
      p = EventBuffer::put_u64(p, i);
      p = EventBuffer::put_u64(p, w);
    }
    control_->flush();
  }
  void move(std::uint64_t from, std::uint64_t to) {
    if (packed_) {
      collector_->move(from, to);
    } else {
      std::uint8_t* p = collector_->begin_record(trace::kMoveBytes);
      p = EventBuffer::put_u8(p, static_cast<std::uint8_t>(trace::Tag::kMove));
      p = EventBuffer::put_u64(p, from);
      EventBuffer::put_u64(p, to);
    }
    collector_->flush();
  }
  void move_range(std::uint64_t from, std::uint64_t to, std::uint64_t bytes) {
    collector_->move_range(from, to, bytes);
    collector_->flush();
  }
  void free(std::uint64_t addr) {
    if (packed_) {
      collector_->free(addr);
    } else {
      std::uint8_t* p = collector_->begin_record(trace::kFreeBytes);
      p = EventBuffer::put_u8(p, static_cast<std::uint8_t>(trace::Tag::kFree));
      EventBuffer::put_u64(p, addr);
    }
    collector_->flush();
  }
  void free_range(std::uint64_t addr, std::uint64_t bytes) {
    collector_->free_range(addr, bytes);
    collector_->flush();
  }
  void stale(std::uint64_t addr, std::uint64_t last_access) {
    std::uint8_t* p = control_->begin_record(1 + 24);
    p = EventBuffer::put_u8(p, static_cast<std::uint8_t>(trace::Tag::kStale));
    p = EventBuffer::put_u64(p, addr);
    p = EventBuffer::put_u64(p, last_access);
    EventBuffer::put_u64(p, epoch_);
    control_->flush();
  }
  // A path record (trace version 3) as given, valid or not: tests of the reader's checks.
  struct PathStep {
    std::uint64_t addr;
    std::uint32_t type;
    std::string via;
  };
  void path(std::uint32_t site, std::uint32_t type, std::uint64_t target, std::uint8_t status, std::uint8_t root_kind,
            const std::string& root_name, const std::vector<PathStep>& steps, std::uint32_t total_steps,
            std::uint64_t visited = 10, int claimed_steps = -1) {
    std::size_t n = 1 + 8 + 4 + 4 + 8 + 1 + 8 + 1 + EventBuffer::string_bytes(root_name) + 4 + 2;
    for (const PathStep& s : steps) n += 8 + 4 + EventBuffer::string_bytes(s.via);
    std::uint8_t* p = control_->begin_record(n);
    p = EventBuffer::put_u8(p, static_cast<std::uint8_t>(trace::Tag::kPath));
    p = EventBuffer::put_u64(p, epoch_);
    p = EventBuffer::put_u32(p, site);
    p = EventBuffer::put_u32(p, type);
    p = EventBuffer::put_u64(p, target);
    p = EventBuffer::put_u8(p, status);
    p = EventBuffer::put_u64(p, visited);
    p = EventBuffer::put_u8(p, root_kind);
    p = EventBuffer::put_string(p, root_name);
    p = EventBuffer::put_u32(p, total_steps);
    p = EventBuffer::put_u16(p, static_cast<std::uint16_t>(claimed_steps >= 0 ? claimed_steps : static_cast<int>(steps.size())));
    for (const PathStep& s : steps) {
      p = EventBuffer::put_u64(p, s.addr);
      p = EventBuffer::put_u32(p, s.type);
      p = EventBuffer::put_string(p, s.via);
    }
    control_->flush();
  }
  // A found path, complete, ending at its last step.
  void path_found(std::uint32_t site, std::uint32_t type, std::uint8_t root_kind, const std::string& root_name,
                  const std::vector<PathStep>& steps) {
    path(site, type, steps.back().addr, 0, root_kind, root_name, steps, static_cast<std::uint32_t>(steps.size()));
  }
  void gc_end() {
    std::uint8_t* p = control_->begin_record(1 + 16);
    p = EventBuffer::put_u8(p, static_cast<std::uint8_t>(trace::Tag::kGcEnd));
    p = EventBuffer::put_u64(p, epoch_);
    EventBuffer::put_u64(p, bytes_);
    control_->flush();
    writer_->set_epoch(++epoch_);
  }
  // A whole stop-the-world GC: bits, then frees and moves.
  void gc(const std::vector<std::uint64_t>& accessed, const std::vector<std::uint64_t>& frees = {},
          const std::vector<std::pair<std::uint64_t, std::uint64_t>>& moves = {}) {
    gc_begin();
    if (!accessed.empty()) bitmap(accessed);
    for (std::uint64_t f : frees) free(f);
    for (auto [from, to] : moves) move(from, to);
    gc_end();
  }
  void end() {
    std::uint8_t* p = control_->begin_record(1 + 16);
    p = EventBuffer::put_u8(p, static_cast<std::uint8_t>(trace::Tag::kEnd));
    p = EventBuffer::put_u64(p, epoch_);
    EventBuffer::put_u64(p, bytes_);
    control_->flush();
  }
  std::vector<std::byte> take() {
    threads_.clear();
    control_.reset();
    collector_.reset();
    REQUIRE(writer_->status().ok());
    return sink_->take();
  }

 private:
  static void raw(EventBuffer& b, const std::vector<std::uint8_t>& bytes) {
    std::memcpy(b.begin_record(bytes.size()), bytes.data(), bytes.size());
    b.flush();
  }
  EventBuffer& thread_buffer(std::uint32_t t) {
    auto& b = threads_[t];
    if (!b) b = writer_->make_buffer(trace::kThreadStreamBase + t);
    return *b;
  }
  const Space& find_space(std::uint32_t id) const {
    for (const Space& s : spaces_)
      if (s.id == id) return s;
    FAIL("no such space");
    return spaces_.front();
  }

  std::vector<Space> spaces_;
  std::uint32_t granule_;
  bool packed_ = true;
  MemorySink* sink_ = nullptr;
  std::unique_ptr<TraceWriter> writer_;
  std::unique_ptr<EventBuffer> control_, collector_;
  std::map<std::uint32_t, std::unique_ptr<EventBuffer>> threads_;
  std::uint64_t epoch_ = 0, bytes_ = 0;
};

}  // namespace objprof::test
