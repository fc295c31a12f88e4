// Trace validation and decoding. Structure: a chunk source (memory or file) yields framed,
// CRC-checked payloads; the decoder walks records with a bounds-checked cursor.
#include "objprof/trace_reader.h"

#include "objprof/config.h"
#include "objprof/crc32c.h"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <unordered_map>

namespace objprof::trace {
namespace {

std::uint32_t load_u32(const std::uint8_t* p) { std::uint32_t v; std::memcpy(&v, p, 4); return v; }
std::uint64_t load_u64(const std::uint8_t* p) { std::uint64_t v; std::memcpy(&v, p, 8); return v; }

// Thrown inside the decoder only, turned into an Error at the API boundary.
struct DecodeError {
  std::string what;
};

class Cursor {
 public:
  Cursor(const std::uint8_t* p, std::size_t n) : p_(p), end_(p + n), begin_(p) {}
  bool done() const { return p_ == end_; }
  std::size_t offset() const { return static_cast<std::size_t>(p_ - begin_); }
  std::size_t left() const { return static_cast<std::size_t>(end_ - p_); }
  // The hot readers below are inlined into the decoder's switch and their errors thrown out of
  // line: a call per field, with the error's formatting in its body, cost the front ~25
  // instructions a field.
  OBJPROF_ALWAYS_INLINE void need(std::size_t n, const char* what) const {
    if (left() < n) [[unlikely]] short_of(n, what);
  }
  [[noreturn]] OBJPROF_NOINLINE void short_of(std::size_t n, const char* what) const {
    throw DecodeError{fmt::format("{} needs {} bytes at payload offset {}, only {} left", what, n, offset(), left())};
  }
  std::uint8_t u8(const char* what) { need(1, what); return *p_++; }
  std::uint16_t u16(const char* what) { need(2, what); std::uint16_t v; std::memcpy(&v, p_, 2); p_ += 2; return v; }
  std::uint32_t u32(const char* what) { need(4, what); auto v = load_u32(p_); p_ += 4; return v; }
  std::uint64_t u64(const char* what) { need(8, what); auto v = load_u64(p_); p_ += 8; return v; }
  std::string str(const char* what) {
    std::uint16_t n = u16(what);
    need(n, what);
    std::string s(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    return s;
  }
  const std::uint8_t* take(std::size_t n, const char* what) { need(n, what); auto* q = p_; p_ += n; return q; }
  // Unsigned LEB128: at most kMaxUvarBytes bytes and 64 bits. Most values (sites, types, sizes,
  // address deltas) take one to three bytes: with room for the longest encoding left, they are
  // read without a test for the chunk's end per byte (the analyzer's front decodes every record
  // on one thread). A tenth byte, or a value near the chunk's end, takes the checked loop,
  // which gives the errors.
  OBJPROF_ALWAYS_INLINE std::uint64_t uvar(const char* what) {
    if (left() >= kMaxUvarBytes) [[likely]] {
      std::uint64_t v = p_[0];
      if (!(v & 0x80)) {
        ++p_;
        return v;
      }
      v &= 0x7F;
      for (unsigned i = 1; i < kMaxUvarBytes - 1; ++i) {
        const std::uint8_t b = p_[i];
        v |= std::uint64_t{b & 0x7Fu} << (7 * i);
        if (!(b & 0x80)) {
          p_ += i + 1;
          return v;
        }
      }
    }
    return uvar_checked(what);
  }
  OBJPROF_NOINLINE std::uint64_t uvar_checked(const char* what) {
    std::uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
      if (p_ == end_) throw DecodeError{fmt::format("{} runs past the end of its chunk at payload offset {}", what, offset())};
      const std::uint8_t b = *p_++;
      if (shift == 63 && b > 1) throw DecodeError{fmt::format("{} does not fit 64 bits (payload offset {})", what, offset() - 1)};
      v |= std::uint64_t{b & 0x7Fu} << shift;
      if (!(b & 0x80)) return v;
    }
  }
  OBJPROF_ALWAYS_INLINE std::uint32_t uvar32(const char* what) {
    const std::uint64_t v = uvar(what);
    if (v > 0xFFFF'FFFFu) [[unlikely]] too_wide(v, what);
    return static_cast<std::uint32_t>(v);
  }
  [[noreturn]] OBJPROF_NOINLINE static void too_wide(std::uint64_t v, const char* what) {
    throw DecodeError{fmt::format("{} {} does not fit 32 bits", what, v)};
  }
  // A packed address relative to `prev`, which becomes it (trace_format.h, "Packed records").
  OBJPROF_ALWAYS_INLINE std::uint64_t addr(std::uint64_t& prev, const char* what) {
    const std::uint64_t v = uvar(what);
    if (v & 1) [[unlikely]] {
      absolute_addr(prev, v, what);
    } else {
      prev += static_cast<std::uint64_t>(unzigzag(v >> 1)) << 3;
    }
    return prev;
  }
  OBJPROF_NOINLINE void absolute_addr(std::uint64_t& prev, std::uint64_t code, const char* what) {
    if (code != 1) throw DecodeError{fmt::format("{} has the odd delta code {} (only 1, an absolute address, is odd)", what, code)};
    prev = u64(what);
  }

 private:
  const std::uint8_t* p_;
  const std::uint8_t* end_;
  const std::uint8_t* begin_;
};

class Decoder {
 public:
  explicit Decoder(Visitor& v) : v_(v) { allow_tags(); }
  void set_version(std::uint32_t version) {
    version_ = version;
    allow_tags();
  }

  void chunk(const std::uint8_t* payload, std::size_t n, std::uint32_t stream, std::uint64_t epoch, ReadSummary& sum) {
    if (epoch < epoch_) throw DecodeError{fmt::format("chunk epoch {} goes back before epoch {}", epoch, epoch_)};
    // gc-end(e) is written before anything is stamped e + 1, so a chunk is at most one ahead.
    if (epoch > epoch_ + 1) throw DecodeError{fmt::format("chunk epoch {} is ahead of the trace's epoch {}", epoch, epoch_)};
    if (ended_) throw DecodeError{"chunk after the end record"};
    Context ctx{stream, epoch};
    Cursor c(payload, n);
    prev_addr_ = prev_to_ = 0;  // packed addresses are deltas within one chunk
    while (!c.done()) {
      record(c, ctx);
      ++sum.records;
    }
  }
  bool ended() const { return ended_; }
  bool saw_header() const { return header_seen_; }

 private:
  OBJPROF_ALWAYS_INLINE void record(Cursor& c, const Context& ctx) {
    const std::uint8_t tag = c.u8("record tag");
    if (!allowed_[tag]) [[unlikely]] refuse(tag, c.offset() - 1);
    switch (static_cast<Tag>(tag)) {
      case Tag::kHeader: {
        Header h;
        h.granule_bytes = c.u32("header granule");
        if (h.granule_bytes == 0 || (h.granule_bytes & (h.granule_bytes - 1)))
          throw DecodeError{fmt::format("header granule {} is not a power of two", h.granule_bytes)};
        log2_granule_ = static_cast<std::uint32_t>(__builtin_ctz(h.granule_bytes));
        const std::uint16_t n = c.u16("header space count");
        for (std::uint16_t i = 0; i < n; ++i) {
          SpaceDef s;
          s.id = c.u32("space id");
          s.begin = c.u64("space begin");
          s.end = c.u64("space end");
          s.name = c.str("space name");
          if (s.end <= s.begin) throw DecodeError{fmt::format("space {} has end {:#x} <= begin {:#x}", s.id, s.end, s.begin)};
          if (space_words_.count(s.id)) throw DecodeError{fmt::format("space id {} defined twice", s.id)};
          space_words_[s.id] = (((s.end - s.begin) >> log2_granule_) + 63) / 64;
          h.spaces.push_back(std::move(s));
        }
        ranges_.clear();
        for (const SpaceDef& s : h.spaces) ranges_.push_back({s.begin, s.end, s.id});
        std::sort(ranges_.begin(), ranges_.end(), [](const Range& x, const Range& y) { return x.begin < y.begin; });
        for (std::size_t i = 1; i < ranges_.size(); ++i)
          if (ranges_[i].begin < ranges_[i - 1].end)
            throw DecodeError{fmt::format("space {} [{:#x}, {:#x}) overlaps space {} [{:#x}, {:#x})", ranges_[i].id, ranges_[i].begin,
                                          ranges_[i].end, ranges_[i - 1].id, ranges_[i - 1].begin, ranges_[i - 1].end)};
        header_seen_ = true;
        allow_tags();
        v_.header(h);
        break;
      }
      case Tag::kTypeDef: {
        TypeDef t;
        t.id = c.u32("type id");
        t.instance_size = c.u64("type size");
        if (t.instance_size > kMaxObjectBytes)
          throw DecodeError{fmt::format("type {} instance size {} exceeds the {} byte limit", t.id, t.instance_size, kMaxObjectBytes)};
        const std::uint8_t arr = c.u8("type array flag");
        if (arr > 1) throw DecodeError{fmt::format("type {} array flag is {}, not 0 or 1", t.id, arr)};
        t.is_array = arr == 1;
        t.name = c.str("type name");
        v_.type_def(t);
        break;
      }
      case Tag::kSiteDef: {
        SiteDef s;
        s.id = c.u32("site id");
        s.pc = c.u64("site pc");
        s.bytecode_offset = c.u32("site bytecode offset");
        s.method = c.str("site method");
        v_.site_def(s);
        break;
      }
      case Tag::kThreadDef: {
        ThreadDef t;
        t.id = c.u32("thread id");
        t.name = c.str("thread name");
        v_.thread_def(t);
        break;
      }
      case Tag::kThreadEnd: v_.thread_end(c.u32("thread id")); break;
      case Tag::kAlloc: {
        AllocEvent a;
        a.site = c.u32("alloc site");
        a.type = c.u32("alloc type");
        a.addr = c.u64("alloc address");
        a.size = c.u64("alloc size");
        alloc(a, ctx);
        break;
      }
      case Tag::kAllocPacked:
      case Tag::kAllocResized: {
        const bool resized = static_cast<Tag>(tag) == Tag::kAllocResized;
        AllocEvent a;
        a.site = c.uvar32("alloc site");
        a.type = c.uvar32("alloc type");
        a.addr = c.addr(prev_addr_, "alloc address");
        a.size = c.uvar("alloc size");
        const std::uint64_t bytes = resized ? c.uvar("alloc-resized footprint") : 0;
        alloc(a, ctx);
        if (resized) resize(a.addr, bytes, ctx);
        break;
      }
      case Tag::kMove: {
        const std::uint64_t from = c.u64("move from");
        move(from, c.u64("move to"), ctx);
        break;
      }
      case Tag::kMovePacked: {
        const std::uint64_t from = c.addr(prev_addr_, "move from");
        move(from, c.addr(prev_to_, "move to"), ctx);
        break;
      }
      case Tag::kMoveGranules: {
        prev_addr_ += granules(c.u32("granule move from"));
        prev_to_ += granules(c.u32("granule move to"));
        move(prev_addr_, prev_to_, ctx);
        break;
      }
      case Tag::kMoveRange: {
        MoveEvent m;
        m.from = c.u64("move-range from");
        m.to = c.u64("move-range to");
        m.bytes = c.u64("move-range bytes");
        m.range = true;
        m.epoch = ctx.epoch;
        if (m.from + m.bytes < m.from || m.to + m.bytes < m.to) throw DecodeError{"move-range wraps around the address space"};
        check_in_space("move-range", "from range", m.from, m.bytes);
        check_in_space("move-range", "to range", m.to, m.bytes);
        v_.move(m);
        break;
      }
      case Tag::kResize: {
        const std::uint64_t addr = c.u64("resize address");
        resize(addr, c.u64("resize bytes"), ctx);
        break;
      }
      case Tag::kResizePacked: {
        const std::uint64_t addr = c.addr(prev_addr_, "resize address");
        resize(addr, c.uvar("resize bytes"), ctx);
        break;
      }
      case Tag::kFree: free(c.u64("free address"), ctx); break;
      case Tag::kFreePacked:
        free(c.addr(prev_addr_, "free address"), ctx);
        break;
      case Tag::kFreeRange: {
        FreeEvent f;
        f.addr = c.u64("free-range address");
        f.bytes = c.u64("free-range bytes");
        f.range = true;
        f.epoch = ctx.epoch;
        if (f.addr + f.bytes < f.addr) throw DecodeError{"free-range wraps around the address space"};
        check_in_space("free-range", "range", f.addr, f.bytes);
        v_.free(f);
        break;
      }
      case Tag::kGcBegin: {
        GcEvent g;
        g.epoch = c.u64("gc-begin epoch");
        const std::uint8_t kind = c.u8("gc kind");
        if (kind > static_cast<std::uint8_t>(GcKind::kCompacting)) throw DecodeError{fmt::format("unknown gc kind {}", kind)};
        g.kind = static_cast<GcKind>(kind);
        g.bytes_allocated = c.u64("gc-begin bytes");
        check_bytes("gc-begin", g.bytes_allocated);
        if (in_gc_) throw DecodeError{fmt::format("gc-begin of epoch {} inside gc of epoch {}", g.epoch, epoch_)};
        if (g.epoch != epoch_) throw DecodeError{fmt::format("gc-begin for epoch {} while in epoch {}", g.epoch, epoch_)};
        in_gc_ = true;
        v_.gc_begin(g);
        break;
      }
      case Tag::kGcEnd: {
        GcEvent g;
        g.epoch = c.u64("gc-end epoch");
        g.bytes_allocated = c.u64("gc-end bytes");
        check_bytes("gc-end", g.bytes_allocated);
        if (!in_gc_ || g.epoch != epoch_) throw DecodeError{fmt::format("gc-end for epoch {} without its gc-begin", g.epoch)};
        in_gc_ = false;
        ++epoch_;
        v_.gc_end(g);
        break;
      }
      case Tag::kBitmapDense: {
        const std::uint32_t space = c.u32("bitmap space");
        const std::uint64_t first = c.u64("bitmap first word");
        const std::uint32_t count = c.u32("bitmap word count");
        check_words(space, first, count);
        const std::uint8_t* w = c.take(std::size_t{count} * 8, "bitmap words");
        words_.clear();
        for (std::uint32_t i = 0; i < count; ++i) {
          std::uint64_t word = load_u64(w + 8 * i);
          if (word) words_.emplace_back(first + i, word);
        }
        v_.bitmap_words(space, ctx.epoch, words_);
        break;
      }
      case Tag::kBitmapSparse: {
        const std::uint32_t space = c.u32("bitmap space");
        const std::uint32_t count = c.u32("bitmap entry count");
        const std::uint8_t* w = c.take(std::size_t{count} * 16, "bitmap entries");
        words_.clear();
        std::uint64_t prev = 0;
        const std::uint64_t limit = space_word_count(space);
        for (std::uint32_t i = 0; i < count; ++i) {
          const std::uint64_t idx = load_u64(w + 16 * i), word = load_u64(w + 16 * i + 8);
          if (i > 0 && idx <= prev) throw DecodeError{"bitmap entries are not in increasing word order"};
          prev = idx;
          if (idx >= limit) check_words(space, idx, 1);  // throws: the same error as per entry
          words_.emplace_back(idx, word);
        }
        v_.bitmap_words(space, ctx.epoch, words_);
        break;
      }
      case Tag::kBitmapPacked: {
        const std::uint32_t space = c.uvar32("bitmap space");
        const std::uint64_t count = c.uvar("bitmap entry count");
        // Every entry takes at least 9 bytes: a count beyond what is left is refused before
        // anything is reserved for it.
        if (count > c.left() / 9)
          throw DecodeError{fmt::format("bitmap entry count {} does not fit the {} bytes left in its chunk", count, c.left())};
        words_.clear();
        std::uint64_t idx = 0;
        const std::uint64_t limit = space_word_count(space);
        for (std::uint64_t i = 0; i < count; ++i) {
          const std::uint64_t d = c.uvar("bitmap word index");
          if (i > 0 && d == 0) throw DecodeError{"bitmap entries are not in increasing word order"};
          if (d > ~std::uint64_t{0} - idx) throw DecodeError{fmt::format("bitmap word index {} + {} overflows", idx, d)};
          idx += d;
          const std::uint64_t word = c.u64("bitmap word");
          if (idx >= limit) check_words(space, idx, 1);  // throws: the same error as per entry
          words_.emplace_back(idx, word);
        }
        v_.bitmap_words(space, ctx.epoch, words_);
        break;
      }
      case Tag::kBitmapRuns: {
        const std::uint32_t space = c.uvar32("bitmap space");
        const std::uint64_t count = c.uvar("bitmap run count");
        // Every run takes at least 10 bytes: a count beyond what is left is refused before
        // anything is read for it.
        if (count > c.left() / 10)
          throw DecodeError{fmt::format("bitmap run count {} does not fit the {} bytes left in its chunk", count, c.left())};
        words_.clear();
        const std::uint64_t limit = space_word_count(space);
        std::uint64_t at = 0;  // the end of the run before
        for (std::uint64_t i = 0; i < count; ++i) {
          const std::uint64_t gap = c.uvar("bitmap run gap");
          const std::uint64_t n = c.uvar("bitmap run words");
          if (n == 0) throw DecodeError{"bitmap run of no words"};
          if (gap > ~std::uint64_t{0} - at) throw DecodeError{fmt::format("bitmap run start {} + {} overflows", at, gap)};
          const std::uint64_t first = at + gap;
          if (first > limit || n > limit - first) check_words(space, first, n);  // throws
          if (n > c.left() / 8)
            throw DecodeError{fmt::format("bitmap run of {} words does not fit the {} bytes left in its chunk", n, c.left())};
          const std::uint8_t* w = c.take(n * 8, "bitmap run words");
          for (std::uint64_t j = 0; j < n; ++j)
            if (const std::uint64_t word = load_u64(w + 8 * j)) words_.emplace_back(first + j, word);
          at = first + n;
        }
        v_.bitmap_words(space, ctx.epoch, words_);
        break;
      }
      case Tag::kStale: {
        StaleEvent s;
        s.addr = c.u64("stale address");
        s.last_access_epoch = c.u64("stale last access");
        s.epoch = c.u64("stale epoch");
        if (s.epoch != epoch_ || s.last_access_epoch > s.epoch)
          throw DecodeError{fmt::format("stale record for epoch {} (last access {}) in epoch {}", s.epoch, s.last_access_epoch, epoch_)};
        v_.stale(s);
        break;
      }
      case Tag::kPath: path(c); break;
      case Tag::kEnd: {
        const std::uint64_t epoch = c.u64("end epoch");
        const std::uint64_t bytes = c.u64("end bytes");
        if (epoch != epoch_) throw DecodeError{fmt::format("end record for epoch {} in epoch {}", epoch, epoch_)};
        check_bytes("end", bytes);
        ended_ = true;
        v_.end(epoch, bytes);
        break;
      }
    }
  }

  // The version that introduced a record (0: every version has it) and its name in the error
  // that refuses it in older ones.
  struct Introduced {
    std::uint32_t version;
    const char* name;
  };
  static Introduced introduced(Tag t) {
    switch (t) {
      case Tag::kResize: return {2, "resize"};
      case Tag::kPath: return {3, "path"};
      case Tag::kFreeRange: return {4, "free-range"};
      case Tag::kAllocPacked: return {5, "packed alloc"};
      case Tag::kAllocResized: return {5, "packed alloc-resized"};
      case Tag::kMovePacked: return {5, "packed move"};
      case Tag::kFreePacked: return {5, "packed free"};
      case Tag::kResizePacked: return {5, "packed resize"};
      case Tag::kBitmapPacked: return {6, "packed bitmap"};
      case Tag::kBitmapRuns: return {7, "bitmap runs"};
      case Tag::kMoveGranules: return {8, "granule move"};
      default: return {0, ""};
    }
  }
  // Which tags may come next: known ones the file's version has, the header first and once.
  // One lookup per record instead of a test for each rule; refuse() names the rule broken.
  void allow_tags() {
    for (unsigned t = 0; t < allowed_.size(); ++t) {
      const Tag tag = static_cast<Tag>(t);
      allowed_[t] = t != 0 && t <= kMaxTag && (header_seen_ ? tag != Tag::kHeader : tag == Tag::kHeader) &&
                    version_ >= introduced(tag).version;
    }
  }
  [[noreturn]] OBJPROF_NOINLINE void refuse(std::uint8_t tag, std::size_t at) const {
    if (tag == 0 || tag > kMaxTag) throw DecodeError{fmt::format("unknown record tag {} at payload offset {}", tag, at)};
    if (!header_seen_) throw DecodeError{fmt::format("record tag {} before the header record", tag)};
    if (static_cast<Tag>(tag) == Tag::kHeader) throw DecodeError{"second header record"};
    throw DecodeError{fmt::format("{} record in a version {} trace", introduced(static_cast<Tag>(tag)).name, version_)};
  }

  OBJPROF_ALWAYS_INLINE void alloc(AllocEvent& a, const Context& ctx) {
    if (!ctx.is_thread()) throw DecodeError{fmt::format("alloc record in non-thread stream {}", ctx.stream)};
    a.thread = ctx.thread();
    a.epoch = ctx.epoch;
    a.bytes_clock = bytes_clock_;
    if (a.addr == 0) throw DecodeError{"alloc at address 0"};
    if (a.size > kMaxObjectBytes)
      throw DecodeError{fmt::format("alloc at {:#x} has size {}, above the {} byte limit", a.addr, a.size, kMaxObjectBytes)};
    check_in_space("alloc", "address", a.addr, a.size);
    if (a.size > kMaxBytesAllocated - bytes_clock_)
      throw DecodeError{fmt::format("alloc of {} bytes takes bytes allocated past the {} byte limit", a.size, kMaxBytesAllocated)};
    bytes_clock_ += a.size;
    v_.alloc(a);
  }

  // A granule move's delta (an i32 in 8-byte units) as the 64-bit difference it adds.
  static std::uint64_t granules(std::uint32_t v) noexcept {
    return static_cast<std::uint64_t>(static_cast<std::int64_t>(static_cast<std::int32_t>(v))) * 8;
  }
  OBJPROF_ALWAYS_INLINE void move(std::uint64_t from, std::uint64_t to, const Context& ctx) {
    MoveEvent m;
    m.from = from;
    m.to = to;
    m.epoch = ctx.epoch;
    check_in_space("move", "from address", m.from, 0);
    check_in_space("move", "to address", m.to, 0);
    v_.move(m);
  }

  void resize(std::uint64_t addr, std::uint64_t bytes, const Context& ctx) {
    if (!ctx.is_thread()) throw DecodeError{fmt::format("resize record in non-thread stream {}", ctx.stream)};
    ResizeEvent r;
    r.thread = ctx.thread();
    r.addr = addr;
    r.bytes = bytes;
    r.epoch = ctx.epoch;
    if (r.bytes > kMaxObjectBytes)
      throw DecodeError{fmt::format("resize at {:#x} to {} bytes, above the {} byte limit", r.addr, r.bytes, kMaxObjectBytes)};
    check_in_space("resize", "address", r.addr, 0);
    v_.resize(r);
  }

  void free(std::uint64_t addr, const Context& ctx) {
    check_in_space("free", "address", addr, 0);
    v_.free(FreeEvent{addr, ctx.epoch});
  }

  void path(Cursor& c) {
    PathEvent p;
    p.epoch = c.u64("path epoch");
    p.site = c.u32("path site");
    p.type = c.u32("path type");
    p.target = c.u64("path target");
    const std::uint8_t status = c.u8("path status");
    p.objects_visited = c.u64("path objects visited");
    const std::uint8_t kind = c.u8("path root kind");
    p.path.root_name = c.str("path root name");
    const std::uint32_t total = c.u32("path total steps");
    const std::uint16_t steps = c.u16("path step count");
    if (!in_gc_ || p.epoch != epoch_) throw DecodeError{fmt::format("path record for epoch {} outside the GC of epoch {}", p.epoch, epoch_)};
    if (status > kMaxPathStatus) throw DecodeError{fmt::format("path to {:#x} has unknown status {}", p.target, status)};
    if (kind > kMaxRootKind) throw DecodeError{fmt::format("path to {:#x} has unknown root kind {}", p.target, kind)};
    p.status = static_cast<PathStatus>(status);
    p.path.root_kind = static_cast<RootKind>(kind);
    check_in_space("path", "target", p.target, 0);
    if (steps > total) throw DecodeError{fmt::format("path to {:#x} holds {} steps of a path of {}", p.target, steps, total)};
    if (p.status == PathStatus::kFound && total == 0) throw DecodeError{fmt::format("path to {:#x} found with no step", p.target)};
    if (p.status != PathStatus::kFound && (total != 0 || !p.path.root_name.empty()))
      throw DecodeError{fmt::format("path to {:#x} with status '{}' has a root or steps", p.target, path_status_name(p.status))};
    c.need(std::size_t{steps} * (8 + 4 + 2), "path steps");  // before allocating for them
    p.path.steps.resize(steps);
    for (PathStep& s : p.path.steps) {
      s.addr = c.u64("path step address");
      s.type_id = c.u32("path step type");
      s.via = c.str("path step label");
      check_in_space("path", "step address", s.addr, 0);
    }
    p.path.cut_steps = total - steps;
    if (steps == total && steps > 0 && p.path.steps.back().addr != p.target)
      throw DecodeError{fmt::format("path to {:#x} ends at {:#x}", p.target, p.path.steps.back().addr)};
    v_.path(p);
  }

  // The words of a declared space's bitmap, 0 for an undeclared one: a dump's entries are
  // checked against it, and check_words gives the error of the first that fails.
  std::uint64_t space_word_count(std::uint32_t space) const {
    const auto it = space_words_.find(space);
    return it == space_words_.end() ? 0 : it->second;
  }
  void check_words(std::uint32_t space, std::uint64_t first, std::uint64_t count) {
    auto it = space_words_.find(space);
    if (it == space_words_.end()) throw DecodeError{fmt::format("bitmap record for undeclared space {}", space)};
    if (first > it->second || count > it->second - first)
      throw DecodeError{fmt::format("bitmap words {}..{} outside space {} ({} words)", first, first + count, space, it->second)};
  }

  // [addr, addr + bytes) (just addr when bytes is 0) must lie inside one declared space. The
  // space of the previous address is tried first: a trace's addresses mostly stay in one.
  void check_in_space(const char* record, const char* field, std::uint64_t addr, std::uint64_t bytes) const {
    if (addr - last_.begin < last_.end - last_.begin && (bytes == 0 || bytes <= last_.end - addr)) [[likely]] return;
    find_space(record, field, addr, bytes);
  }
  void find_space(const char* record, const char* field, std::uint64_t addr, std::uint64_t bytes) const {
    auto it = std::upper_bound(ranges_.begin(), ranges_.end(), addr, [](std::uint64_t a, const Range& r) { return a < r.begin; });
    if (it != ranges_.begin()) {
      --it;
      if (addr < it->end && (bytes == 0 || bytes <= it->end - addr)) {
        last_ = *it;
        return;
      }
    }
    if (bytes == 0)
      throw DecodeError{fmt::format("{} {} {:#x} is outside every declared space", record, field, addr)};
    throw DecodeError{fmt::format("{} {} [{:#x}, +{}) is outside every declared space", record, field, addr, bytes)};
  }
  static void check_bytes(const char* record, std::uint64_t bytes) {
    if (bytes > kMaxBytesAllocated)
      throw DecodeError{fmt::format("{} bytes allocated {} exceeds the {} byte limit", record, bytes, kMaxBytesAllocated)};
  }

  struct Range {
    std::uint64_t begin, end;
    std::uint32_t id;
  };
  Visitor& v_;
  std::vector<Range> ranges_;  // declared spaces sorted by begin (they do not overlap)
  mutable Range last_{0, 0, 0};  // the space check_in_space found last (empty: none yet)
  bool header_seen_ = false, ended_ = false, in_gc_ = false;
  std::uint32_t log2_granule_ = 3;
  std::uint32_t version_ = kVersion;
  std::uint64_t epoch_ = 0;
  std::uint64_t bytes_clock_ = 0;
  std::uint64_t prev_addr_ = 0, prev_to_ = 0;  // the current chunk's packed-address bases
  std::unordered_map<std::uint32_t, std::uint64_t> space_words_;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> words_;
  std::array<bool, 256> allowed_{};  // by tag (allow_tags)
};

// Validates one chunk header; returns payload size.
std::uint32_t check_chunk_header(const std::uint8_t* h, std::uint64_t chunk_index, std::uint64_t offset) {
  if (load_u32(h) != kChunkMagic)
    throw DecodeError{fmt::format("chunk {} at offset {}: bad chunk magic {:#010x}", chunk_index, offset, load_u32(h))};
  const std::uint32_t size = load_u32(h + 4);
  if (size > kMaxChunkPayload)
    throw DecodeError{fmt::format("chunk {} at offset {}: payload of {} bytes exceeds the {} byte limit", chunk_index, offset, size, kMaxChunkPayload)};
  return size;
}

void check_crc(const std::uint8_t* h, const std::uint8_t* payload, std::uint32_t size, std::uint64_t chunk_index, std::uint64_t offset) {
  std::uint32_t crc = crc32c(h + 12, 12);
  crc = crc32c(payload, size, crc);
  if (crc != load_u32(h + 8))
    throw DecodeError{fmt::format("chunk {} at offset {}: CRC32C mismatch (stored {:#010x}, computed {:#010x})", chunk_index, offset, load_u32(h + 8), crc)};
}

void check_preamble(const std::uint8_t* p, std::size_t n) {
  if (n < kPreambleBytes) throw DecodeError{fmt::format("file of {} bytes is too short for an objprof trace preamble", n)};
  if (std::memcmp(p, kMagic, 8) != 0) throw DecodeError{"not an objprof trace (bad magic)"};
  const std::uint32_t version = load_u32(p + 8);
  if (version < kMinVersion || version > kVersion)
    throw DecodeError{fmt::format("trace version {} is not supported (this reader reads versions {} to {})", version, kMinVersion, kVersion)};
  if (load_u32(p + 12) != 0) throw DecodeError{fmt::format("trace flags {:#x} are not supported by this reader", load_u32(p + 12))};
}

void finish(ReadSummary& sum, const Decoder& d) {
  sum.complete = d.ended();
  if (!sum.truncated && !sum.complete)
    sum.warning = fmt::format("trace has no end record after {} chunks: the profiled process stopped before closing it", sum.chunks);
}

// A chunk source: fills header/payload, returns false at clean EOF, sets truncated on a partial chunk.
template <class Source>
Result<ReadSummary> run(Source& src, Visitor& visitor) {
  ReadSummary sum;
  Decoder dec(visitor);
  try {
    std::uint8_t pre[kPreambleBytes];
    const std::size_t got = src.read(pre, kPreambleBytes);
    check_preamble(pre, got);
    dec.set_version(load_u32(pre + 8));
    sum.bytes = kPreambleBytes;
    std::vector<std::uint8_t> payload;
    for (;;) {
      std::uint8_t h[kChunkHeaderBytes];
      const std::uint64_t offset = sum.bytes;
      const std::size_t hn = src.read(h, kChunkHeaderBytes);
      if (hn == 0) break;
      if (hn < kChunkHeaderBytes) {
        sum.truncated = true;
        sum.warning = fmt::format("trace ends inside the header of chunk {} at offset {} ({} of {} bytes); read up to the last whole chunk", sum.chunks, offset, hn, kChunkHeaderBytes);
        break;
      }
      const std::uint32_t size = check_chunk_header(h, sum.chunks, offset);
      payload.resize(size);
      const std::size_t pn = src.read(payload.data(), size);
      if (pn < size) {
        sum.truncated = true;
        sum.warning = fmt::format("trace ends inside chunk {} at offset {} ({} of {} payload bytes); read up to the last whole chunk", sum.chunks, offset, pn, size);
        break;
      }
      check_crc(h, payload.data(), size, sum.chunks, offset);
      try {
        dec.chunk(payload.data(), size, load_u32(h + 12), load_u64(h + 16), sum);
      } catch (DecodeError& e) {
        throw DecodeError{fmt::format("chunk {} at offset {}: {}", sum.chunks, offset, e.what)};
      }
      ++sum.chunks;
      sum.bytes += kChunkHeaderBytes + size;
      visitor.chunk_end(kChunkHeaderBytes + size);
    }
    if (!dec.saw_header() && !sum.truncated) throw DecodeError{"trace has no header record"};
  } catch (DecodeError& e) {
    return make_error(src.io_error.empty() ? ErrorCode::kCorrupt : ErrorCode::kIo,
                      src.io_error.empty() ? e.what : src.io_error);
  }
  if (!src.io_error.empty()) return make_error(ErrorCode::kIo, src.io_error);
  finish(sum, dec);
  return sum;
}

struct MemorySource {
  std::span<const std::byte> data;
  std::size_t pos = 0;
  std::string io_error;
  std::size_t read(void* out, std::size_t n) {
    const std::size_t k = std::min(n, data.size() - pos);
    if (k > 0) std::memcpy(out, data.data() + pos, k);  // an empty span may have a null data()
    pos += k;
    return k;
  }
};

struct FileSource {
  std::FILE* f = nullptr;
  std::string path;
  std::string io_error;
  std::size_t read(void* out, std::size_t n) {
    std::size_t k = std::fread(out, 1, n, f);
    if (k < n && std::ferror(f)) {
      io_error = fmt::format("reading trace '{}': {}", path, std::strerror(errno));
      throw DecodeError{io_error};
    }
    return k;
  }
};

class Collector final : public Visitor {
 public:
  explicit Collector(Contents& c) : c_(c) {}
  void header(const Header& h) override { c_.header = h; }
  void type_def(const TypeDef& t) override { c_.types.push_back(t); }
  void site_def(const SiteDef& s) override { c_.sites.push_back(s); }
  void thread_def(const ThreadDef& t) override { c_.threads.push_back(t); }
  void thread_end(std::uint32_t t) override { c_.ended_threads.push_back(t); }
  void alloc(const AllocEvent& a) override { c_.allocs.push_back(a); }
  void move(const MoveEvent& m) override { c_.moves.push_back(m); }
  void free(const FreeEvent& f) override { c_.frees.push_back(f); }
  void resize(const ResizeEvent& r) override { c_.resizes.push_back(r); }
  void gc_begin(const GcEvent& g) override { c_.gc_begins.push_back(g); }
  void gc_end(const GcEvent& g) override { c_.gc_ends.push_back(g); }
  void bitmap_words(std::uint32_t space, std::uint64_t epoch, std::span<const std::pair<std::uint64_t, std::uint64_t>> w) override {
    if (c_.bitmaps.empty() || c_.bitmaps.back().space != space || c_.bitmaps.back().epoch != epoch)
      c_.bitmaps.push_back({space, epoch, {}});
    c_.bitmaps.back().words.insert(c_.bitmaps.back().words.end(), w.begin(), w.end());
  }
  void stale(const StaleEvent& s) override { c_.stale.push_back(s); }
  void path(const PathEvent& p) override { c_.paths.push_back(p); }

 private:
  Contents& c_;
};

}  // namespace

Result<ReadSummary> read(std::span<const std::byte> data, Visitor& visitor) {
  MemorySource src{data, 0, {}};
  return run(src, visitor);
}

Result<ReadSummary> read_file(const std::string& path, Visitor& visitor) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return make_error(ErrorCode::kIo, fmt::format("cannot open trace '{}': {}", path, std::strerror(errno)));
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> guard(f, &std::fclose);
  FileSource src{f, path, {}};
  auto r = run(src, visitor);
  if (!r.ok()) return Error{r.error().code, fmt::format("{}: {}", path, r.error().message)};
  return r;
}

Result<Contents> load(std::span<const std::byte> data) {
  Contents c;
  Collector col(c);
  auto r = read(data, col);
  if (!r.ok()) return r.error();
  c.summary = *r;
  return c;
}

Result<Contents> load_file(const std::string& path) {
  Contents c;
  Collector col(c);
  auto r = read_file(path, col);
  if (!r.ok()) return r.error();
  c.summary = *r;
  return c;
}

std::vector<std::uint64_t> Contents::marked_addresses(std::uint64_t epoch) const {
  std::vector<std::uint64_t> out;
  for (const auto& dump : bitmaps) {
    if (dump.epoch != epoch) continue;
    const SpaceDef* space = nullptr;
    for (const auto& s : header.spaces)
      if (s.id == dump.space) space = &s;
    if (!space) continue;
    for (auto [idx, word] : dump.words)
      for (int b = 0; b < 64; ++b)
        if ((word >> b) & 1) out.push_back(space->begin + (idx * 64 + static_cast<std::uint64_t>(b)) * header.granule_bytes);
  }
  return out;
}

}  // namespace objprof::trace
