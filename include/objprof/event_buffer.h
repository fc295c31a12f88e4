// EventBuffer: one stream's chunk under construction. Hot records (alloc, move, free, resize)
// are appended inline, packed, with one bounds check; when the chunk is full it is framed
// (length, CRC32C) and handed to the TraceWriter's sink. One buffer belongs to one thread.
//
// The chunk's checksum is computed as the records are written, a block of kCrcBlock bytes at
// a time, by the thread that owns the buffer: the one bounds check is against the end of the
// current block, and passing it (once per ~4 KiB) checksums the block. A flush then checksums
// only what came after the last block. So the mutators' buffers, which a GC's gc_begin
// flushes (up to a whole chunk each, 64 KiB by default), cost the collecting thread their
// last few KiB instead of all of it: the mutators did the rest as they wrote, as they always
// did for their full chunks.
#pragma once

#include "objprof/config.h"
#include "objprof/trace_format.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>

namespace objprof {

class TraceWriter;

class EventBuffer {
 public:
  EventBuffer(TraceWriter* writer, std::uint32_t stream, std::size_t payload_capacity);
  ~EventBuffer();
  EventBuffer(const EventBuffer&) = delete;
  EventBuffer& operator=(const EventBuffer&) = delete;

  std::uint32_t stream() const noexcept { return stream_; }
  std::size_t pending_bytes() const noexcept { return static_cast<std::size_t>(pos_ - payload_); }
  std::size_t capacity() const noexcept { return static_cast<std::size_t>(end_ - payload_); }

  // The hot records are written packed (trace_format.h, "Packed records"): varints, addresses
  // as deltas from the chunk's previous one. Each reserves its largest size, writes through a
  // local pointer (so pos_/end_ stay in registers) and then gives back what it did not use.
  OBJPROF_ALWAYS_INLINE void alloc(std::uint32_t site, std::uint32_t type, std::uint64_t addr, std::uint64_t size) {
    std::uint8_t* p = room(trace::kMaxAllocPackedBytes);
    alloc_tag_ = p;
    *p++ = static_cast<std::uint8_t>(trace::Tag::kAllocPacked);
    p = put_uvar(p, site);
    p = put_uvar(p, type);
    p = put_addr(p, addr, prev_addr_);
    pos_ = alloc_end_ = put_uvar(p, size);
  }
  OBJPROF_ALWAYS_INLINE void move(std::uint64_t from, std::uint64_t to) {
    room(trace::kMaxMovePackedBytes);
    move_fitting(from, to);
  }
  // Whether a record of up to `n` bytes fits without a flush. A hook whose fast path must make
  // no call (it then needs no stack frame) asks first and writes with a *_fitting writer.
  bool fits(std::size_t n) const noexcept { return static_cast<std::size_t>(limit_ - pos_) >= n; }
  // move and free for a caller that knows fits(kMaxMovePackedBytes / kMaxFreePackedBytes).
  // A move goes as a granule move (two i32 deltas in 8-byte units, trace_format.h) when both
  // deltas fit one: one test for both, then plain stores. The packed form's varints cost a
  // copying collector's traced move ~23 instructions more (points-semispace, callgrind: ~18
  // for the fixed width, ~5 more for the one mask test).
  OBJPROF_ALWAYS_INLINE void move_fitting(std::uint64_t from, std::uint64_t to) {
    std::uint8_t* p = pos_;
    const std::uint64_t df = from - prev_addr_, dt = to - prev_to_;
    // Both tests for both deltas in one: a delta fits when d + span (span a multiple of 8, so
    // the low bits stay d's) has no bit set below 3 or from 35 up.
    constexpr std::uint64_t kOutside = ~(2 * trace::kMoveGranuleSpan - 1) | 7;
    if (OBJPROF_LIKELY((((df + trace::kMoveGranuleSpan) | (dt + trace::kMoveGranuleSpan)) & kOutside) == 0)) {
      prev_addr_ = from;
      prev_to_ = to;
      *p = static_cast<std::uint8_t>(trace::Tag::kMoveGranules);
      put_u32(p + 1, static_cast<std::uint32_t>(df >> 3));
      put_u32(p + 5, static_cast<std::uint32_t>(dt >> 3));
      pos_ = p + trace::kMoveGranulesBytes;
      return;
    }
    *p++ = static_cast<std::uint8_t>(trace::Tag::kMovePacked);
    p = put_addr(p, from, prev_addr_);
    pos_ = put_addr(p, to, prev_to_);
  }
  OBJPROF_ALWAYS_INLINE void free_fitting(std::uint64_t addr) {
    std::uint8_t* p = pos_;
    *p++ = static_cast<std::uint8_t>(trace::Tag::kFreePacked);
    pos_ = put_addr(p, addr, prev_addr_);
  }
  OBJPROF_ALWAYS_INLINE void move_range(std::uint64_t from, std::uint64_t to, std::uint64_t bytes) {
    struct __attribute__((packed)) Rec { std::uint8_t tag; std::uint64_t from, to, bytes; };
    static_assert(sizeof(Rec) == trace::kMoveRangeBytes);
    const Rec r{static_cast<std::uint8_t>(trace::Tag::kMoveRange), from, to, bytes};
    std::memcpy(reserve(sizeof r), &r, sizeof r);
  }
  OBJPROF_ALWAYS_INLINE void free(std::uint64_t addr) {
    room(trace::kMaxFreePackedBytes);
    free_fitting(addr);
  }
  void free_range(std::uint64_t addr, std::uint64_t bytes) {
    room(trace::kFreeRangeBytes);
    free_range_fitting(addr, bytes);
  }
  // free_range for a caller that knows fits(kFreeRangeBytes).
  OBJPROF_ALWAYS_INLINE void free_range_fitting(std::uint64_t addr, std::uint64_t bytes) {
    struct __attribute__((packed)) Rec { std::uint8_t tag; std::uint64_t addr, bytes; };
    static_assert(sizeof(Rec) == trace::kFreeRangeBytes);
    const Rec r{static_cast<std::uint8_t>(trace::Tag::kFreeRange), addr, bytes};
    std::memcpy(pos_, &r, sizeof r);
    pos_ += sizeof r;
  }

  // A resize of the object the previous record allocated (nothing written between them, same
  // chunk) extends that record into an alloc-resized one: its footprint is one more varint.
  OBJPROF_ALWAYS_INLINE void resize(std::uint64_t addr, std::uint64_t bytes) {
    if (pos_ == alloc_end_ && addr == prev_addr_ && static_cast<std::size_t>(limit_ - pos_) >= trace::kMaxUvarBytes) {
      *alloc_tag_ = static_cast<std::uint8_t>(trace::Tag::kAllocResized);
      pos_ = put_uvar(pos_, bytes);
      alloc_end_ = nullptr;
      return;
    }
    std::uint8_t* p = room(trace::kMaxResizePackedBytes);
    *p++ = static_cast<std::uint8_t>(trace::Tag::kResizePacked);
    p = put_addr(p, addr, prev_addr_);
    pos_ = put_uvar(p, bytes);
  }

  // Generic record building for the rare records (definitions, GC, bitmap dumps).
  // begin_record reserves `bytes` contiguous bytes (bytes <= capacity()).
  std::uint8_t* begin_record(std::size_t bytes) { return reserve(bytes); }
  // A record whose length is known only once it is written (varints): room for at most
  // `bytes` (<= capacity()), then end_record with the end of what was written.
  std::uint8_t* begin_record_at_most(std::size_t bytes) { return room(bytes); }
  void end_record(std::uint8_t* end) noexcept { pos_ = end; }
  static std::uint8_t* put_u8(std::uint8_t* p, std::uint8_t v) { *p = v; return p + 1; }
  static std::uint8_t* put_u16(std::uint8_t* p, std::uint16_t v) { std::memcpy(p, &v, 2); return p + 2; }
  static std::uint8_t* put_u32(std::uint8_t* p, std::uint32_t v) { std::memcpy(p, &v, 4); return p + 4; }
  static std::uint8_t* put_u64(std::uint8_t* p, std::uint64_t v) { std::memcpy(p, &v, 8); return p + 8; }
  // Strings longer than trace::kMaxString are cut to that length.
  static std::size_t string_bytes(std::string_view s) { return 2 + std::min(s.size(), trace::kMaxString); }
  static std::uint8_t* put_string(std::uint8_t* p, std::string_view s);
  // Unsigned LEB128 (at most trace::kMaxUvarBytes bytes). Values of up to three bytes (most
  // sizes, ids and address deltas) are written without the loop: 0.24 M fewer instructions in
  // listleak-semispace's traced collections (49.10 M -> 48.86 M).
  static OBJPROF_ALWAYS_INLINE std::uint8_t* put_uvar(std::uint8_t* p, std::uint64_t v) {
    if (v < 0x80) {
      *p = static_cast<std::uint8_t>(v);
      return p + 1;
    }
    if (v < 0x4000) {
      p[0] = static_cast<std::uint8_t>(v | 0x80);
      p[1] = static_cast<std::uint8_t>(v >> 7);
      return p + 2;
    }
    if (v < 0x20'0000) {
      p[0] = static_cast<std::uint8_t>(v | 0x80);
      p[1] = static_cast<std::uint8_t>((v >> 7) | 0x80);
      p[2] = static_cast<std::uint8_t>(v >> 14);
      return p + 3;
    }
    while (v >= 0x80) {
      *p++ = static_cast<std::uint8_t>(v | 0x80);
      v >>= 7;
    }
    *p++ = static_cast<std::uint8_t>(v);
    return p;
  }
  // `addr` as a delta from `prev` (trace_format.h), which becomes `addr`.
  static OBJPROF_ALWAYS_INLINE std::uint8_t* put_addr(std::uint8_t* p, std::uint64_t addr, std::uint64_t& prev) {
    const std::uint64_t d = addr - prev;
    prev = addr;
    if (OBJPROF_LIKELY((d & 7) == 0)) return put_uvar(p, trace::zigzag(static_cast<std::int64_t>(d) >> 3) << 1);
    *p = 1;
    return put_u64(p + 1, addr);
  }

  // Frames and writes the pending records as one chunk (no-op when empty).
  void flush();

  // How many bytes are checksummed at a time as records are written (see the top).
  static constexpr std::size_t kCrcBlock = 4096;
  // The checksum of a chunk's first `bytes` payload bytes, taken before the chunk was framed:
  // `crc` is the CRC32C of the stream and epoch fields (stamped `epoch`) and those bytes,
  // which the framing continues over the rest when the chunk is stamped with the same epoch.
  struct PartialCrc {
    std::uint64_t epoch = 0;
    std::uint32_t crc = 0;
    std::size_t bytes = 0;
  };

 private:
  OBJPROF_ALWAYS_INLINE std::uint8_t* reserve(std::size_t n) {
    std::uint8_t* p = room(n);
    pos_ += n;
    return p;
  }
  // Makes room for a record of at most n bytes and returns where it goes; the caller sets
  // pos_ past what it wrote.
  OBJPROF_ALWAYS_INLINE std::uint8_t* room(std::size_t n) {
    if (OBJPROF_UNLIKELY(static_cast<std::size_t>(limit_ - pos_) < n)) flush_for(n);
    return pos_;
  }
  // Past the block's end: checksums the block (and goes on in the chunk), or the chunk is full.
  OBJPROF_NOINLINE void flush_for(std::size_t n);
  // Checksums the payload written since the last call, but for a last record that may still
  // change (an alloc a resize may extend), and moves limit_ a block on (at least n bytes).
  void checksum_written(std::size_t n) noexcept;
  // A new chunk starts: packed addresses are deltas within one chunk.
  void restart_deltas() noexcept {
    prev_addr_ = prev_to_ = 0;
    alloc_end_ = nullptr;
  }
  // A new chunk starts: nothing of it checksummed yet.
  void restart_crc() noexcept {
    crc_at_ = payload_;
    partial_ = false;
    limit_ = payload_ + std::min(kCrcBlock, capacity());
  }

  TraceWriter* writer_;
  std::uint32_t stream_;
  std::unique_ptr<std::uint8_t[]> storage_;  // chunk header + payload
  std::uint8_t* payload_;
  std::uint8_t* pos_;
  std::uint8_t* end_;
  std::uint8_t* limit_;   // where the current checksum block ends (<= end_, >= pos_)
  std::uint8_t* crc_at_;  // the payload before it is in crc_
  bool partial_ = false;  // crc_ holds the stream, crc_epoch_ and [payload_, crc_at_)
  std::uint32_t crc_ = 0;
  std::uint64_t crc_epoch_ = 0;
  std::uint64_t prev_addr_ = 0;  // the chunk's previous packed address (0 at its start)
  std::uint64_t prev_to_ = 0;    // the chunk's previous move destination (0 at its start)
  std::uint8_t* alloc_tag_ = nullptr;  // the last alloc record's tag byte
  std::uint8_t* alloc_end_ = nullptr;  // and its end, while it is the chunk's last record
};

}  // namespace objprof
