// SharedSegment: bitmaps and a trace ring in a named shared-memory segment (Boost.Interprocess).
// Layout and protocol: docs/shared-memory.md.
#include "objprof/shared_segment.h"

#include "objprof/profiler.h"
#include "objprof/trace_format.h"

#include <boost/interprocess/exceptions.hpp>
#include <boost/interprocess/mapped_region.hpp>
#include <boost/interprocess/permissions.hpp>
#include <boost/interprocess/shared_memory_object.hpp>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstring>
#include <ctime>
#include <new>
#include <thread>

#include <fmt/format.h>

namespace objprof {
namespace bip = boost::interprocess;

namespace internal {

// "OBJPSHM1" read as a little-endian u64.
constexpr std::uint64_t kSegmentMagic = 0x314D4853504A424FULL;
constexpr std::size_t kHeaderBytes = 4096;
constexpr std::size_t kPage = 4096;
constexpr std::size_t kMinRingBytes = 4096;
constexpr std::size_t kSpaceNameBytes = 48;

struct SpaceRecord {
  std::uint64_t begin;
  std::uint64_t end;
  std::uint32_t log2_granule;
  std::uint32_t reserved0;
  std::uint64_t bitmap_bytes;          // per buffer
  std::uint64_t buffer_offset[2];      // from the segment start
  std::atomic<std::uint32_t> active_index;  // AccessBitmap publishes the active buffer here
  std::uint32_t reserved1;
  char name[kSpaceNameBytes];          // NUL-padded, truncated
};

// Offset 0 of the segment. Static fields are written once before `magic` is published
// (release); dynamic ones are atomics. Cache-line groups keep the writer's and the
// consumer's counters apart.
struct Header {
  std::atomic<std::uint64_t> magic;
  std::uint32_t version;
  std::uint32_t header_bytes;
  std::uint64_t total_bytes;
  std::int64_t owner_pid;
  std::uint64_t created_unix_ms;
  std::uint32_t space_count;
  std::uint32_t policy;
  std::uint64_t full_wait_ms;
  std::uint64_t ring_offset;
  std::uint64_t ring_bytes;

  // Writer side.
  alignas(64) std::atomic<std::uint64_t> write_pos;  // bytes committed, monotonic (release)
  std::atomic<std::uint64_t> chunks_committed;
  std::atomic<std::uint64_t> chunks_lost;
  std::atomic<std::uint64_t> bytes_lost;
  std::atomic<std::uint32_t> state;
  std::atomic<std::uint32_t> preamble_ready;
  std::uint8_t preamble[trace::kPreambleBytes];

  // Consumer side.
  alignas(64) std::atomic<std::uint64_t> read_pos;   // bytes drained, monotonic (release)
  std::atomic<std::int64_t> consumer_pid;

  alignas(64) SpaceRecord spaces[kMaxSegmentSpaces];
};

static_assert(sizeof(Header) <= kHeaderBytes, "segment header must fit its page");
static_assert(sizeof(SpaceRecord) == 104);
// docs/shared-memory.md lists these offsets; readers in other languages rely on them.
static_assert(offsetof(Header, version) == 8 && offsetof(Header, total_bytes) == 16 && offsetof(Header, owner_pid) == 24 &&
              offsetof(Header, space_count) == 40 && offsetof(Header, full_wait_ms) == 48 &&
              offsetof(Header, ring_offset) == 56 && offsetof(Header, ring_bytes) == 64 &&
              offsetof(Header, write_pos) == 128 && offsetof(Header, chunks_committed) == 136 &&
              offsetof(Header, chunks_lost) == 144 && offsetof(Header, bytes_lost) == 152 &&
              offsetof(Header, state) == 160 && offsetof(Header, preamble_ready) == 164 &&
              offsetof(Header, preamble) == 168 && offsetof(Header, read_pos) == 192 &&
              offsetof(Header, consumer_pid) == 200 && offsetof(Header, spaces) == 256);
static_assert(offsetof(SpaceRecord, bitmap_bytes) == 24 && offsetof(SpaceRecord, buffer_offset) == 32 &&
              offsetof(SpaceRecord, active_index) == 48 && offsetof(SpaceRecord, name) == 56);
static_assert(std::atomic<std::uint64_t>::is_always_lock_free && std::atomic<std::int64_t>::is_always_lock_free &&
                  std::atomic<std::uint32_t>::is_always_lock_free,
              "atomics shared between processes must be lock-free");
static_assert(std::endian::native == std::endian::little, "the segment layout is little-endian");

struct SpaceLayout {
  HeapSpace space;
  std::size_t bitmap_bytes = 0;
  std::uint64_t offset[2] = {0, 0};
};

// One mapping of a segment plus its layout as validated when it was mapped. Static layout
// values are never re-read from the segment after validation.
struct SegmentMapping {
  std::string name;
  bip::mapped_region region;
  std::uint8_t* base = nullptr;
  std::size_t size = 0;
  bool writable = false;
  std::uint64_t ring_offset = 0, ring_bytes = 0;
  RingFullPolicy policy = RingFullPolicy::kWaitThenStop;
  std::uint64_t full_wait_ms = 0;
  std::vector<SpaceLayout> spaces;

  Header& header() const noexcept { return *reinterpret_cast<Header*>(base); }
  std::uint8_t* ring() const noexcept { return base + ring_offset; }
  SpaceRecord& record(std::size_t i) const noexcept { return header().spaces[i]; }
};

}  // namespace internal

using internal::Header;
using internal::SegmentMapping;

namespace {

constexpr std::size_t kMaxNameLength = 200;

std::uint64_t round_up(std::uint64_t v, std::uint64_t to) { return (v + to - 1) / to * to; }

bool process_alive(std::int64_t pid) {
  if (pid <= 0 || pid > INT_MAX) return false;
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

std::uint64_t now_unix_ms() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}

Error boost_error(const std::string& what, const std::string& name, const bip::interprocess_exception& e) {
  switch (e.get_error_code()) {
    case bip::not_found_error:
    case bip::not_such_file_or_directory:
      return make_error(ErrorCode::kIo, fmt::format("no shared segment named '{}' ({} does not exist)", name,
                                                    SharedSegment::device_path(name)));
    case bip::already_exists_error:
      return make_error(ErrorCode::kInvalidArgument,
                        fmt::format("shared segment '{}' already exists; remove it first (objprof shm remove {}) "
                                    "or set SegmentLayout::replace_existing",
                                    name, name));
    case bip::security_error:
      return make_error(ErrorCode::kIo, fmt::format("{} shared segment '{}': permission denied (segments are 0600: "
                                                    "only the user who created it can open it)",
                                                    what, name));
    default:
      return make_error(ErrorCode::kIo, fmt::format("{} shared segment '{}': {}", what, name, e.what()));
  }
}

// Copies n ring bytes starting at ring position pos (wrapping) to dst. With nothing to copy, dst
// may be an empty vector's data() (null): memcpy must not see it, even for 0 bytes.
void copy_from_ring(const SegmentMapping& m, std::uint64_t pos, std::size_t n, std::byte* dst) {
  if (n == 0) return;
  const std::uint64_t cap = m.ring_bytes;
  const std::size_t off = static_cast<std::size_t>(pos % cap);
  const std::size_t first = std::min<std::size_t>(n, static_cast<std::size_t>(cap) - off);
  std::memcpy(dst, m.ring() + off, first);
  if (n > first) std::memcpy(dst + first, m.ring(), n - first);
}

// Validates the dynamic ring positions (a foreign process may have written anything).
Status check_positions(const SegmentMapping& m, std::uint64_t rp, std::uint64_t wp) {
  if (rp > wp || wp - rp > m.ring_bytes)
    return make_error(ErrorCode::kCorrupt,
                      fmt::format("shared segment '{}': ring positions are inconsistent (read {}, write {}, capacity {})",
                                  m.name, rp, wp, m.ring_bytes));
  return {};
}

Result<std::uint32_t> active_index(const SegmentMapping& m, std::size_t i) {
  const std::uint32_t idx = m.record(i).active_index.load(std::memory_order_acquire);
  if (idx > 1)
    return make_error(ErrorCode::kCorrupt,
                      fmt::format("shared segment '{}': space {} has active bitmap buffer {} (must be 0 or 1)", m.name, i, idx));
  return idx;
}

std::uint8_t load_byte(const std::uint8_t* p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }

SegmentInfo read_info(const SegmentMapping& m) {
  const Header& h = m.header();
  SegmentInfo info;
  info.name = m.name;
  info.version = h.version;
  info.total_bytes = m.size;
  info.owner_pid = h.owner_pid;
  info.owner_alive = process_alive(h.owner_pid);
  info.created_unix_ms = h.created_unix_ms;
  const std::uint32_t st = h.state.load(std::memory_order_acquire);
  info.state = st <= 3 ? static_cast<SegmentState>(st) : SegmentState::kCreated;
  info.policy = m.policy;
  info.full_wait_ms = m.full_wait_ms;
  info.ring_bytes = m.ring_bytes;
  info.write_pos = h.write_pos.load(std::memory_order_acquire);
  info.read_pos = h.read_pos.load(std::memory_order_acquire);
  info.chunks_committed = h.chunks_committed.load(std::memory_order_acquire);
  info.chunks_lost = h.chunks_lost.load(std::memory_order_acquire);
  info.bytes_lost = h.bytes_lost.load(std::memory_order_acquire);
  info.consumer_pid = h.consumer_pid.load(std::memory_order_acquire);
  info.has_preamble = h.preamble_ready.load(std::memory_order_acquire) != 0;
  for (std::size_t i = 0; i < m.spaces.size(); ++i) {
    SegmentSpaceInfo s;
    s.space = m.spaces[i].space;
    s.bitmap_bytes = m.spaces[i].bitmap_bytes;
    auto idx = active_index(m, i);
    s.active_buffer = idx.ok() ? *idx : 0;
    const std::uint8_t* buf = m.base + m.spaces[i].offset[s.active_buffer];
    for (std::size_t b = 0; b < s.bitmap_bytes; ++b) s.marked += static_cast<std::uint64_t>(std::popcount(load_byte(buf + b)));
    info.spaces.push_back(std::move(s));
  }
  return info;
}

// Validates the header of a freshly mapped segment and fills the mapping's layout.
Status validate(SegmentMapping& m) {
  const Header& h = m.header();
  const std::string& n = m.name;
  if (h.magic.load(std::memory_order_acquire) != internal::kSegmentMagic)
    return make_error(ErrorCode::kCorrupt,
                      fmt::format("shared segment '{}' is not an objprof segment (bad magic; or its creator has not "
                                  "finished initialising it)",
                                  n));
  if (h.version != kSegmentVersion)
    return make_error(ErrorCode::kUnsupported,
                      fmt::format("shared segment '{}' has layout version {}; this objprof reads version {}", n,
                                  h.version, kSegmentVersion));
  if (h.header_bytes != internal::kHeaderBytes)
    return make_error(ErrorCode::kCorrupt, fmt::format("shared segment '{}': header size {} (expected {})", n,
                                                       h.header_bytes, internal::kHeaderBytes));
  if (h.total_bytes != m.size)
    return make_error(ErrorCode::kCorrupt, fmt::format("shared segment '{}': header says {} bytes but the segment has {} "
                                                       "(truncated or foreign)",
                                                       n, h.total_bytes, m.size));
  if (h.space_count > kMaxSegmentSpaces)
    return make_error(ErrorCode::kCorrupt, fmt::format("shared segment '{}': {} spaces (at most {})", n, h.space_count,
                                                       kMaxSegmentSpaces));
  if (h.policy > static_cast<std::uint32_t>(RingFullPolicy::kDropAndCount))
    return make_error(ErrorCode::kCorrupt, fmt::format("shared segment '{}': unknown ring-full policy {}", n, h.policy));
  const std::uint64_t total = m.size;
  auto region_ok = [&](std::uint64_t off, std::uint64_t bytes) {
    return off >= internal::kHeaderBytes && off <= total && bytes <= total - off;
  };
  if (h.ring_bytes != 0 && (h.ring_bytes < internal::kMinRingBytes || !region_ok(h.ring_offset, h.ring_bytes)))
    return make_error(ErrorCode::kCorrupt, fmt::format("shared segment '{}': trace ring [{}, +{}) lies outside the {} "
                                                       "byte segment",
                                                       n, h.ring_offset, h.ring_bytes, total));
  m.ring_offset = h.ring_offset;
  m.ring_bytes = h.ring_bytes;
  m.policy = static_cast<RingFullPolicy>(h.policy);
  m.full_wait_ms = h.full_wait_ms;
  m.spaces.clear();
  for (std::uint32_t i = 0; i < h.space_count; ++i) {
    const internal::SpaceRecord& r = h.spaces[i];
    if (r.log2_granule >= 32)
      return make_error(ErrorCode::kCorrupt, fmt::format("shared segment '{}': space {} has granule 2^{}", n, i, r.log2_granule));
    const void* nul = std::memchr(r.name, 0, internal::kSpaceNameBytes);
    const std::size_t name_len = nul ? static_cast<std::size_t>(static_cast<const char*>(nul) - r.name) : internal::kSpaceNameBytes;
    auto space = HeapSpace::make(r.begin, r.end, 1u << r.log2_granule, std::string(r.name, name_len));
    if (!space.ok())
      return make_error(ErrorCode::kCorrupt, fmt::format("shared segment '{}': space {}: {}", n, i, space.error().message));
    internal::SpaceLayout l;
    l.space = *space;
    l.bitmap_bytes = AccessBitmap::bytes_for(l.space);
    if (r.bitmap_bytes != l.bitmap_bytes)
      return make_error(ErrorCode::kCorrupt, fmt::format("shared segment '{}': space {} bitmap is {} bytes, its range "
                                                         "needs {}",
                                                         n, i, r.bitmap_bytes, l.bitmap_bytes));
    for (int b = 0; b < 2; ++b) {
      l.offset[b] = r.buffer_offset[b];
      if (l.offset[b] % 8 != 0 || !region_ok(l.offset[b], l.bitmap_bytes))
        return make_error(ErrorCode::kCorrupt, fmt::format("shared segment '{}': space {} bitmap buffer {} at [{}, +{}) "
                                                           "lies outside the {} byte segment",
                                                           n, i, b, l.offset[b], l.bitmap_bytes, total));
    }
    m.spaces.push_back(std::move(l));
  }
  return {};
}

Result<std::shared_ptr<SegmentMapping>> open_mapping(const std::string& raw_name, bool writable) {
  auto name = SharedSegment::normalize_name(raw_name);
  if (!name.ok()) return name.error();
  auto m = std::make_shared<SegmentMapping>();
  m->name = *name;
  m->writable = writable;
  try {
    bip::shared_memory_object shm(bip::open_only, m->name.c_str(), writable ? bip::read_write : bip::read_only);
    bip::offset_t size = 0;
    if (!shm.get_size(size)) return make_error(ErrorCode::kIo, fmt::format("cannot stat shared segment '{}'", m->name));
    if (size < static_cast<bip::offset_t>(internal::kHeaderBytes))
      return make_error(ErrorCode::kCorrupt, fmt::format("shared segment '{}' is {} bytes, too small for an objprof "
                                                         "segment header ({} bytes): not an objprof segment",
                                                         m->name, size, internal::kHeaderBytes));
    bip::mapped_region region(shm, writable ? bip::read_write : bip::read_only);
    m->region.swap(region);
  } catch (const bip::interprocess_exception& e) {
    return boost_error("cannot open", m->name, e);
  }
  m->base = static_cast<std::uint8_t*>(m->region.get_address());
  m->size = m->region.get_size();
  OBJPROF_RETURN_IF_ERROR(validate(*m));
  return m;
}

// The trace sink of a segment: appends whole chunks to the ring (see RingFullPolicy).
class SharedRingSink final : public ChunkSink {
 public:
  explicit SharedRingSink(std::shared_ptr<SegmentMapping> m) : m_(std::move(m)) {}
  ~SharedRingSink() override {
    std::uint32_t writing = static_cast<std::uint32_t>(SegmentState::kWriting);
    m_->header().state.compare_exchange_strong(writing, static_cast<std::uint32_t>(SegmentState::kClosed),
                                               std::memory_order_acq_rel);
  }

  Status write(std::span<const std::byte> bytes) override {
    Header& h = m_->header();
    if (!preamble_done_) {
      if (bytes.size() != trace::kPreambleBytes)
        return make_error(ErrorCode::kProtocol, "shared trace ring: the first write must be the 16-byte trace preamble");
      std::memcpy(h.preamble, bytes.data(), bytes.size());
      h.preamble_ready.store(1, std::memory_order_release);
      preamble_done_ = true;
      return {};
    }
    const std::uint64_t n = bytes.size();
    if (n == 0) return {};  // nothing to publish (and bytes.data() may be null)
    const std::uint64_t cap = m_->ring_bytes;
    const std::uint64_t wp = h.write_pos.load(std::memory_order_relaxed);  // only this sink writes it
    if (stopped_) return lose(n, "the trace ring stopped earlier");
    if (n > cap) return lose(n, fmt::format("a chunk of {} bytes is larger than the whole ring", n));
    // Policy and wait come from this process's own copy, not from the (shared, writable) header.
    const RingFullPolicy policy = m_->policy;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(m_->full_wait_ms);
    auto nap = std::chrono::microseconds(50);
    for (;;) {
      const std::uint64_t rp = h.read_pos.load(std::memory_order_acquire);
      if (rp > wp || wp - rp > cap) {
        // Only a broken consumer writes read_pos; refuse rather than overwrite unread data.
        stopped_ = true;
        h.state.store(static_cast<std::uint32_t>(SegmentState::kStopped), std::memory_order_release);
        return make_error(ErrorCode::kCorrupt,
                          fmt::format("shared segment '{}': the consumer's read position {} is inconsistent with the "
                                      "write position {}; the trace stops here",
                                      m_->name, rp, wp));
      }
      if (wp - rp + n <= cap) break;
      if (policy == RingFullPolicy::kDropAndCount) return lose(n, "the ring is full");
      const std::int64_t consumer = h.consumer_pid.load(std::memory_order_acquire);
      if (!process_alive(consumer))
        return lose(n, fmt::format("the {} byte ring is full and no consumer is attached to drain it", cap));
      if (std::chrono::steady_clock::now() >= deadline)
        return lose(n, fmt::format("the {} byte ring is full and consumer pid {} did not drain it within {} ms", cap,
                                   consumer, m_->full_wait_ms));
      std::this_thread::sleep_for(nap);
      nap = std::min(nap * 2, std::chrono::microseconds(2000));
    }
    const std::size_t off = static_cast<std::size_t>(wp % cap);
    const std::size_t first = std::min<std::size_t>(bytes.size(), static_cast<std::size_t>(cap) - off);
    std::memcpy(m_->ring() + off, bytes.data(), first);
    if (bytes.size() > first) std::memcpy(m_->ring(), bytes.data() + first, bytes.size() - first);
    // Publish only now: a reader never sees a chunk before all of its bytes are in place.
    h.write_pos.store(wp + n, std::memory_order_release);
    h.chunks_committed.fetch_add(1, std::memory_order_release);
    return {};
  }

 private:
  // A chunk the ring refuses: always counted in the segment. Under kDropAndCount that is all;
  // under kWaitThenStop the trace stops here and the sink reports an error from now on.
  Status lose(std::uint64_t n, const std::string& why) {
    Header& h = m_->header();
    h.chunks_lost.fetch_add(1, std::memory_order_relaxed);
    h.bytes_lost.fetch_add(n, std::memory_order_release);
    if (m_->policy == RingFullPolicy::kDropAndCount && !stopped_) return {};
    stopped_ = true;
    h.state.store(static_cast<std::uint32_t>(SegmentState::kStopped), std::memory_order_release);
    return make_error(ErrorCode::kIo, fmt::format("shared segment '{}': {}; the trace in the segment stops after {} "
                                                  "bytes (everything before is intact)",
                                                  m_->name, why, h.write_pos.load(std::memory_order_relaxed)));
  }

  std::shared_ptr<SegmentMapping> m_;
  bool preamble_done_ = false;
  bool stopped_ = false;
};

}  // namespace

const char* ring_full_policy_name(RingFullPolicy policy) noexcept {
  switch (policy) {
    case RingFullPolicy::kWaitThenStop: return "wait-then-stop";
    case RingFullPolicy::kDropAndCount: return "drop-and-count";
  }
  return "unknown";
}

const char* segment_state_name(SegmentState state) noexcept {
  switch (state) {
    case SegmentState::kCreated: return "created";
    case SegmentState::kWriting: return "writing";
    case SegmentState::kClosed: return "closed";
    case SegmentState::kStopped: return "stopped (ring full)";
  }
  return "unknown";
}

std::string format_segment_info(const SegmentInfo& info) {
  std::string s;
  s += fmt::format("segment:   {} ({}), {} bytes, layout version {}\n", info.name,
                   SharedSegment::device_path(info.name), info.total_bytes, info.version);
  s += fmt::format("owner:     pid {} ({})\n", info.owner_pid, info.owner_alive ? "running" : "not running");
  {
    const std::time_t secs = static_cast<std::time_t>(info.created_unix_ms / 1000);
    std::tm tm{};
    char when[64] = "?";
    if (::gmtime_r(&secs, &tm)) std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
    s += fmt::format("created:   {}\n", when);
  }
  std::string state = segment_state_name(info.state);
  if (info.state == SegmentState::kWriting && !info.owner_alive)
    state += ": the owner died mid-trace; every committed chunk is intact";
  s += fmt::format("state:     {}\n", state);
  if (info.ring_bytes == 0) {
    s += "trace:     no ring\n";
  } else {
    s += fmt::format("ring:      {} bytes, policy {} (wait {} ms)\n", info.ring_bytes, ring_full_policy_name(info.policy),
                     info.full_wait_ms);
    s += fmt::format("trace:     {} bytes in {} chunks committed, {} drained, {} in the ring\n", info.write_pos,
                     info.chunks_committed, info.read_pos, info.write_pos - std::min(info.read_pos, info.write_pos));
    if (info.chunks_lost)
      s += fmt::format("lost:      {} chunks ({} bytes) refused by a full ring\n", info.chunks_lost, info.bytes_lost);
    s += info.consumer_pid ? fmt::format("consumer:  pid {}\n", info.consumer_pid) : std::string("consumer:  none\n");
  }
  for (std::size_t i = 0; i < info.spaces.size(); ++i) {
    const SegmentSpaceInfo& sp = info.spaces[i];
    s += fmt::format("space {}:   '{}' [{:#x}, {:#x}) K={}, bitmap 2 x {} bytes, active buffer {}, {} granules marked\n", i,
                     sp.space.name(), sp.space.begin(), sp.space.end(), sp.space.alignment(), sp.bitmap_bytes,
                     sp.active_buffer, sp.marked);
  }
  return s;
}

// ----- SharedSegment -----

SharedSegment::SharedSegment(std::shared_ptr<internal::SegmentMapping> mapping) : map_(std::move(mapping)) {}
SharedSegment::~SharedSegment() = default;

Result<std::string> SharedSegment::normalize_name(const std::string& name) {
  std::string n = !name.empty() && name[0] == '/' ? name.substr(1) : name;
  if (n.empty() || n.size() > kMaxNameLength || n[0] == '.')
    return make_error(ErrorCode::kInvalidArgument,
                      fmt::format("bad shared segment name '{}': use 1 to {} characters from [A-Za-z0-9._-], not "
                                  "starting with '.'",
                                  name, kMaxNameLength));
  for (char c : n) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-';
    if (!ok)
      return make_error(ErrorCode::kInvalidArgument,
                        fmt::format("bad shared segment name '{}': character '{}' is not in [A-Za-z0-9._-]", name, c));
  }
  return n;
}

std::string SharedSegment::device_path(const std::string& name) {
  return "/dev/shm/" + (!name.empty() && name[0] == '/' ? name.substr(1) : name);
}

Result<std::unique_ptr<SharedSegment>> SharedSegment::create(const std::string& raw_name, SegmentLayout layout) {
  auto name = normalize_name(raw_name);
  if (!name.ok()) return name.error();
  if (layout.spaces.size() > kMaxSegmentSpaces)
    return make_error(ErrorCode::kInvalidArgument,
                      fmt::format("a shared segment holds at most {} spaces ({} given)", kMaxSegmentSpaces, layout.spaces.size()));
  if (layout.ring_bytes != 0 && layout.ring_bytes < internal::kMinRingBytes)
    return make_error(ErrorCode::kInvalidArgument,
                      fmt::format("trace ring of {} bytes is too small (0 for none, or at least {})", layout.ring_bytes,
                                  internal::kMinRingBytes));
  if (layout.full_wait.count() < 0 || layout.full_wait > std::chrono::hours(24))
    return make_error(ErrorCode::kInvalidArgument, "SegmentLayout::full_wait must be between 0 and 24 hours");
  if (layout.on_full != RingFullPolicy::kWaitThenStop && layout.on_full != RingFullPolicy::kDropAndCount)
    return make_error(ErrorCode::kInvalidArgument, "unknown SegmentLayout::on_full policy");

  // Layout: header page, then two page-aligned buffers per space, then the ring.
  constexpr std::uint64_t kLimit = std::uint64_t{1} << 46;
  std::vector<internal::SpaceLayout> spaces;
  std::uint64_t off = internal::kHeaderBytes;
  for (std::size_t i = 0; i < layout.spaces.size(); ++i) {
    const HeapSpace& sp = layout.spaces[i];
    if (sp.size() == 0) return make_error(ErrorCode::kInvalidArgument, fmt::format("space {} is empty", i));
    internal::SpaceLayout l;
    l.space = sp;
    l.bitmap_bytes = AccessBitmap::bytes_for(sp);
    const std::uint64_t step = round_up(l.bitmap_bytes, internal::kPage);
    if (step > kLimit) return make_error(ErrorCode::kInvalidArgument, fmt::format("space {} is too large for a segment", i));
    for (int b = 0; b < 2; ++b) {
      l.offset[b] = off;
      off += step;
    }
    if (off > kLimit) return make_error(ErrorCode::kInvalidArgument, "the spaces' bitmaps are too large for a segment");
    spaces.push_back(std::move(l));
  }
  const std::uint64_t ring_offset = off;
  if (layout.ring_bytes > kLimit) return make_error(ErrorCode::kInvalidArgument, "trace ring is too large");
  const std::uint64_t total = round_up(off + layout.ring_bytes, internal::kPage);

  const std::string& n = *name;
  auto m = std::make_shared<SegmentMapping>();
  m->name = n;
  m->writable = true;
  bool created = false;
  try {
    if (layout.replace_existing) bip::shared_memory_object::remove(n.c_str());
    bip::permissions perm;
    perm.set_permissions(0600);  // Boost fchmods after creating, so the umask does not matter
    bip::shared_memory_object shm(bip::create_only, n.c_str(), bip::read_write, perm);
    created = true;
    shm.truncate(static_cast<bip::offset_t>(total));
    // Reserve the pages now: touching a page /dev/shm cannot back later would be SIGBUS in
    // the profiled process; here it is a clear error instead.
    const int rc = ::posix_fallocate(shm.get_mapping_handle().handle, 0, static_cast<off_t>(total));
    if (rc != 0 && rc != EOPNOTSUPP && rc != EINVAL) {
      bip::shared_memory_object::remove(n.c_str());
      return make_error(ErrorCode::kIo, fmt::format("cannot reserve {} bytes for shared segment '{}' in /dev/shm: {}",
                                                    total, n, std::strerror(rc)));
    }
    bip::mapped_region region(shm, bip::read_write);
    m->region.swap(region);
  } catch (const bip::interprocess_exception& e) {
    if (created) bip::shared_memory_object::remove(n.c_str());
    return boost_error("cannot create", n, e);
  }
  m->base = static_cast<std::uint8_t*>(m->region.get_address());
  m->size = m->region.get_size();
  m->ring_offset = layout.ring_bytes ? ring_offset : 0;
  m->ring_bytes = layout.ring_bytes;
  m->policy = layout.on_full;
  m->full_wait_ms = static_cast<std::uint64_t>(layout.full_wait.count());
  m->spaces = spaces;

  Header* h = new (m->base) Header{};
  h->version = kSegmentVersion;
  h->header_bytes = internal::kHeaderBytes;
  h->total_bytes = total;
  h->owner_pid = ::getpid();
  h->created_unix_ms = now_unix_ms();
  h->space_count = static_cast<std::uint32_t>(spaces.size());
  h->policy = static_cast<std::uint32_t>(layout.on_full);
  h->full_wait_ms = static_cast<std::uint64_t>(layout.full_wait.count());
  h->ring_offset = m->ring_offset;
  h->ring_bytes = m->ring_bytes;
  for (std::size_t i = 0; i < spaces.size(); ++i) {
    internal::SpaceRecord& r = h->spaces[i];
    const HeapSpace& sp = spaces[i].space;
    r.begin = sp.begin();
    r.end = sp.end();
    r.log2_granule = sp.log2_alignment();
    r.bitmap_bytes = spaces[i].bitmap_bytes;
    r.buffer_offset[0] = spaces[i].offset[0];
    r.buffer_offset[1] = spaces[i].offset[1];
    std::memcpy(r.name, sp.name().data(), std::min(sp.name().size(), internal::kSpaceNameBytes - 1));
  }
  h->magic.store(internal::kSegmentMagic, std::memory_order_release);
  return std::unique_ptr<SharedSegment>(new SharedSegment(std::move(m)));
}

Result<std::unique_ptr<SharedSegmentView>> SharedSegment::attach(const std::string& name, AttachMode mode) {
  const bool consume = mode == AttachMode::kConsume;
  auto m = open_mapping(name, consume);
  if (!m.ok()) return m.error();
  if (consume) {
    if ((*m)->ring_bytes == 0)
      return make_error(ErrorCode::kInvalidArgument, fmt::format("shared segment '{}' has no trace ring to consume", (*m)->name));
    Header& h = (*m)->header();
    const std::int64_t me = ::getpid();
    std::int64_t expected = 0;
    while (!h.consumer_pid.compare_exchange_strong(expected, me, std::memory_order_acq_rel)) {
      if (expected == me || process_alive(expected))
        return make_error(ErrorCode::kInvalidArgument,
                          fmt::format("shared segment '{}' already has a consumer (pid {})", (*m)->name, expected));
      // The previous consumer died: take over from its read position.
    }
  }
  return std::unique_ptr<SharedSegmentView>(new SharedSegmentView(std::move(*m), consume));
}

Status SharedSegment::remove(const std::string& raw_name) {
  auto name = normalize_name(raw_name);
  if (!name.ok()) return name.error();
  if (!bip::shared_memory_object::remove(name->c_str())) {
    const int err = errno;
    if (err == ENOENT)
      return make_error(ErrorCode::kIo, fmt::format("no shared segment named '{}' ({} does not exist)", *name,
                                                    device_path(*name)));
    return make_error(ErrorCode::kIo, fmt::format("cannot remove shared segment '{}': {}", *name, std::strerror(err)));
  }
  return {};
}

const std::string& SharedSegment::name() const noexcept { return map_->name; }
std::size_t SharedSegment::space_count() const noexcept { return map_->spaces.size(); }
const HeapSpace& SharedSegment::space(std::size_t index) const { return map_->spaces.at(index).space; }

AccessBitmap::ExternalBuffers SharedSegment::bitmap_buffers(std::size_t index) const {
  const internal::SpaceLayout& l = map_->spaces.at(index);
  AccessBitmap::ExternalBuffers b;
  b.buffers[0] = map_->base + l.offset[0];
  b.buffers[1] = map_->base + l.offset[1];
  b.active_index = &map_->record(index).active_index;
  return b;
}

Result<std::uint32_t> SharedSegment::add_space_to(Profiler& profiler, std::size_t index) const {
  if (index >= space_count())
    return make_error(ErrorCode::kOutOfRange, fmt::format("shared segment '{}' has {} spaces, not {}", name(),
                                                          space_count(), index + 1));
  return profiler.add_space(space(index), bitmap_buffers(index));
}

Result<std::unique_ptr<ChunkSink>> SharedSegment::make_trace_sink() {
  if (map_->ring_bytes == 0)
    return make_error(ErrorCode::kInvalidArgument, fmt::format("shared segment '{}' was created without a trace ring", name()));
  if (sink_made_)
    return make_error(ErrorCode::kProtocol, fmt::format("shared segment '{}' already has a trace sink", name()));
  sink_made_ = true;
  map_->header().state.store(static_cast<std::uint32_t>(SegmentState::kWriting), std::memory_order_release);
  return std::unique_ptr<ChunkSink>(new SharedRingSink(map_));
}

SegmentInfo SharedSegment::info() const { return read_info(*map_); }

// ----- SharedSegmentView -----

SharedSegmentView::~SharedSegmentView() {
  if (consumer_) {
    std::int64_t me = ::getpid();
    map_->header().consumer_pid.compare_exchange_strong(me, 0, std::memory_order_acq_rel);
  }
}

const std::string& SharedSegmentView::name() const noexcept { return map_->name; }
SegmentInfo SharedSegmentView::info() const { return read_info(*map_); }
std::size_t SharedSegmentView::space_count() const noexcept { return map_->spaces.size(); }
const HeapSpace& SharedSegmentView::space(std::size_t index) const { return map_->spaces.at(index).space; }

Result<TraceCopy> SharedSegmentView::copy_trace() const {
  const SegmentMapping& m = *map_;
  const Header& h = m.header();
  if (m.ring_bytes == 0)
    return make_error(ErrorCode::kInvalidArgument, fmt::format("shared segment '{}' has no trace ring", m.name));
  if (!h.preamble_ready.load(std::memory_order_acquire))
    return make_error(ErrorCode::kTruncated, fmt::format("shared segment '{}' holds no trace yet", m.name));
  TraceCopy out;
  const std::uint64_t wp = h.write_pos.load(std::memory_order_acquire);
  const std::uint64_t rp = h.read_pos.load(std::memory_order_acquire);
  OBJPROF_RETURN_IF_ERROR(check_positions(m, rp, wp));
  out.bytes.resize(trace::kPreambleBytes + (wp - rp));
  std::memcpy(out.bytes.data(), h.preamble, trace::kPreambleBytes);
  copy_from_ring(m, rp, static_cast<std::size_t>(wp - rp), out.bytes.data() + trace::kPreambleBytes);
  // A consumer may have drained (and the writer reused) part of what we copied: keep only
  // what is still behind the consumer's position now. It only ever stops at chunk bounds.
  std::uint64_t begin = rp;
  const std::uint64_t rp2 = h.read_pos.load(std::memory_order_acquire);
  if (rp2 > rp) {
    begin = std::min(rp2, wp);
    out.bytes.erase(out.bytes.begin() + trace::kPreambleBytes,
                    out.bytes.begin() + static_cast<std::ptrdiff_t>(trace::kPreambleBytes + (begin - rp)));
  }
  out.begin = begin;
  out.end = wp;
  out.from_start = begin == 0;
  out.chunks_lost = h.chunks_lost.load(std::memory_order_acquire);
  return out;
}

Result<std::vector<std::byte>> SharedSegmentView::drain() {
  if (!consumer_)
    return make_error(ErrorCode::kInvalidArgument,
                      fmt::format("shared segment '{}': drain needs a view attached with AttachMode::kConsume", name()));
  SegmentMapping& m = *map_;
  Header& h = m.header();
  std::vector<std::byte> out;
  if (!preamble_sent_) {
    if (!h.preamble_ready.load(std::memory_order_acquire)) return out;
    const auto* p = reinterpret_cast<const std::byte*>(h.preamble);
    out.insert(out.end(), p, p + trace::kPreambleBytes);
    preamble_sent_ = true;
  }
  const std::uint64_t wp = h.write_pos.load(std::memory_order_acquire);
  const std::uint64_t rp = h.read_pos.load(std::memory_order_relaxed);
  OBJPROF_RETURN_IF_ERROR(check_positions(m, rp, wp));
  const std::size_t n = static_cast<std::size_t>(wp - rp);
  const std::size_t at = out.size();
  out.resize(at + n);
  copy_from_ring(m, rp, n, out.data() + at);
  // Release: our copy is complete before the writer may reuse the space.
  h.read_pos.store(wp, std::memory_order_release);
  return out;
}

Result<std::vector<std::uint8_t>> SharedSegmentView::copy_bitmap(std::size_t index) const {
  if (index >= space_count())
    return make_error(ErrorCode::kOutOfRange, fmt::format("shared segment '{}' has {} spaces, not {}", name(),
                                                          space_count(), index + 1));
  auto idx = active_index(*map_, index);
  if (!idx.ok()) return idx.error();
  const internal::SpaceLayout& l = map_->spaces[index];
  const std::uint8_t* buf = map_->base + l.offset[*idx];
  std::vector<std::uint8_t> out(l.bitmap_bytes);
  // Byte-wise relaxed loads: mutators in the owner may be marking right now.
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = load_byte(buf + i);
  return out;
}

Result<std::vector<Address>> SharedSegmentView::marked_addresses(std::size_t index) const {
  auto bits = copy_bitmap(index);
  if (!bits.ok()) return bits.error();
  const HeapSpace& sp = space(index);
  std::vector<Address> out;
  for (std::size_t i = 0; i < bits->size(); ++i) {
    for (std::uint8_t b = (*bits)[i]; b; b = static_cast<std::uint8_t>(b & (b - 1))) {
      const std::uint64_t g = i * 8 + static_cast<std::uint64_t>(std::countr_zero(b));
      if (g < sp.granule_count()) out.push_back(sp.address_of(g));
    }
  }
  return out;
}

}  // namespace objprof
