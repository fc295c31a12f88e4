// Reading objprof traces. Everything is validated: preamble, chunk framing and CRC32C, every
// record's tag and length, string and array bounds, space ids and bitmap ranges. A trace that
// ends inside a chunk (the writer was killed) is read up to its last whole chunk and flagged
// as truncated; anything else that fails validation is refused with an error that names the
// chunk, its file offset and what was wrong. The reader never trusts a length before checking
// it against what is actually there.
#pragma once

#include "objprof/result.h"
#include "objprof/root_path.h"
#include "objprof/trace_format.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace objprof::trace {

struct SpaceDef {
  std::uint32_t id = 0;
  std::uint64_t begin = 0, end = 0;
  std::string name;
};
struct Header {
  std::uint32_t granule_bytes = 8;
  std::vector<SpaceDef> spaces;
};
struct TypeDef {
  std::uint32_t id = 0;
  std::uint64_t instance_size = 0;
  bool is_array = false;
  std::string name;
};
struct SiteDef {
  std::uint32_t id = 0;
  std::uint64_t pc = 0;
  std::uint32_t bytecode_offset = 0;
  std::string method;
};
struct ThreadDef {
  std::uint32_t id = 0;
  std::string name;
};
// Where a record came from: its chunk's stream and epoch.
struct Context {
  std::uint32_t stream = 0;
  std::uint64_t epoch = 0;
  bool is_thread() const noexcept { return stream >= kThreadStreamBase; }
  std::uint32_t thread() const noexcept { return stream - kThreadStreamBase; }
};
struct AllocEvent {
  std::uint32_t thread = 0, site = 0, type = 0;
  std::uint64_t addr = 0, size = 0;
  std::uint64_t epoch = 0;
  // Bytes allocated before this object, summed in file order (see docs/trace-format.md).
  std::uint64_t bytes_clock = 0;
};
struct MoveEvent { std::uint64_t from = 0, to = 0, bytes = 0; std::uint64_t epoch = 0; bool range = false; };
// A free (range false, bytes 0) or a free range: every object starting in [addr, addr + bytes)
// died (trace version 4).
struct FreeEvent { std::uint64_t addr = 0; std::uint64_t epoch = 0; std::uint64_t bytes = 0; bool range = false; };
// The object at addr now holds `bytes` in all (header plus the out-of-line parts the runtime
// allocates for it, e.g. a table's array and hash parts); its address range is unchanged.
struct ResizeEvent { std::uint32_t thread = 0; std::uint64_t addr = 0, bytes = 0; std::uint64_t epoch = 0; };
struct GcEvent { std::uint64_t epoch = 0; GcKind kind = GcKind::kFull; std::uint64_t bytes_allocated = 0; };
struct StaleEvent { std::uint64_t addr = 0, last_access_epoch = 0, epoch = 0; };
// The online tracker's search for a path from a GC root to `target`, a stale object of
// (site, type), at the GC of `epoch` (trace version 3). path.steps.back() is the target when
// found and not cut (path.cut_steps); type names are left empty (the trace has type records).
struct PathEvent {
  std::uint64_t epoch = 0;
  std::uint32_t site = 0, type = 0;
  std::uint64_t target = 0;
  PathStatus status = PathStatus::kFound;
  std::uint64_t objects_visited = 0;
  RootPath path;
};

// Receives records in file order. Defaults ignore everything.
class Visitor {
 public:
  virtual ~Visitor() = default;
  virtual void header(const Header&) {}
  virtual void type_def(const TypeDef&) {}
  virtual void site_def(const SiteDef&) {}
  virtual void thread_def(const ThreadDef&) {}
  virtual void thread_end(std::uint32_t /*thread*/) {}
  virtual void alloc(const AllocEvent&) {}
  virtual void move(const MoveEvent&) {}
  virtual void free(const FreeEvent&) {}
  virtual void resize(const ResizeEvent&) {}
  virtual void gc_begin(const GcEvent&) {}
  virtual void gc_end(const GcEvent&) {}
  // Marked words of space `space`: word i covers granules 64*i .. 64*i+63 (bit j = granule 64i+j).
  // Called once per bitmap record, before that epoch's gc_end.
  virtual void bitmap_words(std::uint32_t /*space*/, std::uint64_t /*epoch*/,
                            std::span<const std::pair<std::uint64_t, std::uint64_t>> /*index_word*/) {}
  virtual void stale(const StaleEvent&) {}
  virtual void path(const PathEvent&) {}
  virtual void end(std::uint64_t /*epoch*/, std::uint64_t /*bytes_allocated*/) {}
  // After the records of each whole chunk: the chunk's size in the file, header included
  // (records are packed, so this is how a visitor knows how far into the file it is).
  virtual void chunk_end(std::uint64_t /*chunk_bytes*/) {}
};

struct ReadSummary {
  std::uint64_t chunks = 0;
  std::uint64_t records = 0;
  std::uint64_t bytes = 0;      // bytes of whole chunks read, plus the preamble
  bool truncated = false;       // the file ended inside a chunk; the rest was skipped
  bool complete = false;        // an end record was seen
  std::string warning;          // set when truncated or incomplete: say it to the user
};

// Reads from memory.
Result<ReadSummary> read(std::span<const std::byte> data, Visitor& visitor);
// Reads a file chunk by chunk (memory bounded by the largest chunk).
Result<ReadSummary> read_file(const std::string& path, Visitor& visitor);

// Everything in a trace, for tests and small tools.
struct Contents {
  Header header;
  std::vector<TypeDef> types;
  std::vector<SiteDef> sites;
  std::vector<ThreadDef> threads;
  std::vector<std::uint32_t> ended_threads;
  std::vector<AllocEvent> allocs;
  std::vector<MoveEvent> moves;
  std::vector<FreeEvent> frees;
  std::vector<ResizeEvent> resizes;
  std::vector<GcEvent> gc_begins, gc_ends;
  struct BitmapDump { std::uint32_t space; std::uint64_t epoch; std::vector<std::pair<std::uint64_t, std::uint64_t>> words; };
  std::vector<BitmapDump> bitmaps;
  std::vector<StaleEvent> stale;
  std::vector<PathEvent> paths;
  ReadSummary summary;
  // Addresses marked in `epoch` (all spaces).
  std::vector<std::uint64_t> marked_addresses(std::uint64_t epoch) const;
};
Result<Contents> load(std::span<const std::byte> data);
Result<Contents> load_file(const std::string& path);

}  // namespace objprof::trace
