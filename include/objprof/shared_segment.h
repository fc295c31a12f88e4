// SharedSegment: the access bitmaps and a trace ring in a named POSIX shared-memory segment
// (Boost.Interprocess), so that another process can attach and read them live, and so that
// nothing the profiled process committed is lost when it dies: the segment is a file in
// /dev/shm that outlives every process mapping it. docs/shared-memory.md describes the layout.
//
// Profiled process (writer):
//   auto seg = SharedSegment::create("objprof.1234", {.spaces = {space}, .ring_bytes = 8 << 20});
//   ProfilerOptions o;  o.trace_sink = std::move(*seg.value()->make_trace_sink());
//   auto prof = Profiler::create(std::move(o));
//   seg.value()->add_space_to(**prof, 0);        // the bitmap lives in the segment
// Another process (reader):
//   auto view = SharedSegment::attach("objprof.1234");   // read-only mapping
//   auto trace = view.value()->copy_trace();              // preamble + every committed chunk
//   auto contents = trace::load(trace->bytes);
//
// Lifetime: destroying a SharedSegment (or its sink, or a view) unmaps it and never removes
// it. Removal is explicit: SharedSegment::remove(name) or `objprof shm remove NAME`. The
// segment must outlive the Profiler whose bitmaps it holds (destroy the profiler first).
//
// Permissions: created 0600 (owner read/write only, independent of the umask) and exclusive:
// create fails if the name exists, unless SegmentLayout::replace_existing is set.
//
// Ring-full policy: see RingFullPolicy. The default never loses data silently: the writer
// waits (bounded) for an attached consumer to drain, and otherwise stops the trace with an
// error that the profiler reports (Profiler::trace_status) while everything committed before
// stays readable as a valid trace.
//
// Every value read from a segment is validated (magic, version, sizes and offsets within the
// mapping, ring positions), once at attach and again on every read for the values the writer
// updates, so a foreign or corrupted segment gives an error and never a crash.
#pragma once

#include "objprof/access_bitmap.h"
#include "objprof/heap_space.h"
#include "objprof/result.h"
#include "objprof/trace_sink.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace objprof {

class Profiler;
namespace internal { struct SegmentMapping; }

inline constexpr std::uint32_t kSegmentVersion = 1;
inline constexpr std::size_t kMaxSegmentSpaces = 16;

enum class RingFullPolicy : std::uint32_t {
  // Default. When a chunk does not fit, wait up to SegmentLayout::full_wait for the attached
  // consumer (SharedSegmentView in kConsume mode) to drain; without a live consumer, or after
  // the wait, stop: the chunk is refused, the segment is marked kStopped, and the sink returns
  // an error, so Profiler::trace_status() fails and stats().trace_chunks_lost counts every
  // chunk from there on. The ring keeps a valid, gap-free prefix of the trace.
  kWaitThenStop = 0,
  // Drop the chunk, count it in the segment (chunks_lost, bytes_lost) and go on. The trace in
  // the ring then has gaps; readers see the count in SegmentInfo and `objprof shm` warns.
  kDropAndCount = 1,
};

const char* ring_full_policy_name(RingFullPolicy policy) noexcept;

struct SegmentLayout {
  std::vector<HeapSpace> spaces;             // one double-buffered bitmap each (at most 16)
  std::size_t ring_bytes = std::size_t{8} << 20;  // trace ring capacity; 0 = no trace ring
  RingFullPolicy on_full = RingFullPolicy::kWaitThenStop;
  std::chrono::milliseconds full_wait{2000};
  bool replace_existing = false;             // remove an existing segment of that name first
};

// What the writer is doing, as recorded in the segment.
enum class SegmentState : std::uint32_t {
  kCreated = 0,  // no trace sink yet (or no ring)
  kWriting = 1,  // a sink is writing; if the owner is not alive, it died mid-trace
  kClosed = 2,   // the sink was destroyed (after Profiler::finish the trace has its end record)
  kStopped = 3,  // the ring was full under kWaitThenStop; the trace stops at write_pos
};

const char* segment_state_name(SegmentState state) noexcept;

struct SegmentSpaceInfo {
  HeapSpace space;
  std::size_t bitmap_bytes = 0;   // per buffer
  std::uint32_t active_buffer = 0;
  std::uint64_t marked = 0;       // set bits in the active buffer when info() was taken
};

struct SegmentInfo {
  std::string name;
  std::uint32_t version = 0;
  std::uint64_t total_bytes = 0;
  std::int64_t owner_pid = 0;
  bool owner_alive = false;       // kill(pid, 0); meaningless across pid namespaces
  std::uint64_t created_unix_ms = 0;
  SegmentState state = SegmentState::kCreated;
  RingFullPolicy policy = RingFullPolicy::kWaitThenStop;
  std::uint64_t full_wait_ms = 0;
  std::uint64_t ring_bytes = 0;
  std::uint64_t write_pos = 0;    // trace bytes committed to the ring so far (whole chunks)
  std::uint64_t read_pos = 0;     // bytes drained by a consumer (0 if none ever drained)
  std::uint64_t chunks_committed = 0;
  std::uint64_t chunks_lost = 0;  // refused by a full ring (see RingFullPolicy)
  std::uint64_t bytes_lost = 0;
  std::int64_t consumer_pid = 0;  // 0: no consumer attached
  bool has_preamble = false;      // a trace sink wrote the trace preamble
  std::vector<SegmentSpaceInfo> spaces;
};

// Several lines of "key: value" text, for `objprof shm info`.
std::string format_segment_info(const SegmentInfo& info);

// Trace bytes copied out of a ring: the 16-byte preamble followed by whole chunks, ready for
// trace::read / trace::load.
struct TraceCopy {
  std::vector<std::byte> bytes;
  std::uint64_t begin = 0, end = 0;  // ring positions of the chunks copied: [begin, end)
  bool from_start = true;            // begin == 0: nothing was drained away before the copy
  std::uint64_t chunks_lost = 0;     // the segment's lost count when copied (gaps if > 0)
};

class SharedSegmentView;

// The profiled process's side: creates the segment and writes into it.
class SharedSegment {
 public:
  // Creates /dev/shm/NAME (0600, exclusive) sized for the layout. Names: 1..200 characters
  // from [A-Za-z0-9._-], optionally with one leading '/', not starting with '.'.
  static Result<std::unique_ptr<SharedSegment>> create(const std::string& name, SegmentLayout layout);
  // Attaches to an existing segment from any process (see SharedSegmentView).
  enum class AttachMode { kReadOnly, kConsume };
  static Result<std::unique_ptr<SharedSegmentView>> attach(const std::string& name,
                                                           AttachMode mode = AttachMode::kReadOnly);
  // Removes the name (mappings that exist stay valid until unmapped). Error if it does not exist.
  static Status remove(const std::string& name);
  // Checks a name; returns it without the leading '/'.
  static Result<std::string> normalize_name(const std::string& name);
  // Where Linux shows the segment: /dev/shm/NAME.
  static std::string device_path(const std::string& name);

  ~SharedSegment();  // unmaps only: the segment and its data stay until remove()
  SharedSegment(const SharedSegment&) = delete;
  SharedSegment& operator=(const SharedSegment&) = delete;

  const std::string& name() const noexcept;
  std::size_t space_count() const noexcept;
  const HeapSpace& space(std::size_t index) const;
  // The two bitmap buffers of space `index` and the published active-buffer index, for
  // AccessBitmap::create / Profiler::add_space.
  AccessBitmap::ExternalBuffers bitmap_buffers(std::size_t index) const;
  // profiler.add_space(space(index), bitmap_buffers(index)).
  Result<std::uint32_t> add_space_to(Profiler& profiler, std::size_t index) const;

  // The trace sink writing into the ring (ProfilerOptions::trace_sink). At most one per
  // segment; it keeps the mapping alive on its own, so it may outlive this object.
  Result<std::unique_ptr<ChunkSink>> make_trace_sink();

  SegmentInfo info() const;

 private:
  explicit SharedSegment(std::shared_ptr<internal::SegmentMapping> mapping);
  std::shared_ptr<internal::SegmentMapping> map_;
  bool sink_made_ = false;
};

// Another process's side (or the same process): a validated view of a segment.
//   kReadOnly: mapped read-only; copy_trace() and the bitmaps, never changes the segment.
//   kConsume:  mapped read-write; registers as the segment's one consumer, and drain() hands
//              out each committed chunk once and frees its ring space, so a ring smaller than
//              the trace never fills. A consumer whose process died is replaced.
class SharedSegmentView {
 public:
  ~SharedSegmentView();  // a consumer unregisters; nothing is removed
  SharedSegmentView(const SharedSegmentView&) = delete;
  SharedSegmentView& operator=(const SharedSegmentView&) = delete;

  const std::string& name() const noexcept;
  SegmentInfo info() const;

  // The preamble and every committed chunk still in the ring. Without a consumer this is the
  // whole trace so far. A chunk being written is never included.
  Result<TraceCopy> copy_trace() const;
  // kConsume only: the chunks committed since the last drain (the preamble before the first
  // one). Concatenating every drain() result gives the trace.
  Result<std::vector<std::byte>> drain();

  std::size_t space_count() const noexcept;
  const HeapSpace& space(std::size_t index) const;
  // The active bitmap buffer of space `index` (the epoch in progress), copied byte by byte.
  Result<std::vector<std::uint8_t>> copy_bitmap(std::size_t index) const;
  // Addresses whose granule is marked in the active buffer, in address order.
  Result<std::vector<Address>> marked_addresses(std::size_t index) const;

 private:
  friend class SharedSegment;
  explicit SharedSegmentView(std::shared_ptr<internal::SegmentMapping> mapping, bool consumer)
      : map_(std::move(mapping)), consumer_(consumer) {}
  std::shared_ptr<internal::SegmentMapping> map_;
  bool consumer_ = false;
  bool preamble_sent_ = false;
};

}  // namespace objprof
