// EventBuffer: one stream's chunk under construction. Hot records (alloc, move, free) are
// appended inline with a bounds check and a few stores; when the chunk is full it is framed
// (length, CRC32C) and handed to the TraceWriter's sink. One buffer belongs to one thread.
#pragma once

#include "objprof/config.h"
#include "objprof/trace_format.h"

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

  // Each hot record is composed in a local packed struct and stored with one memcpy, so the
  // compiler keeps pos_/end_ in registers instead of reloading them after every byte store.
  OBJPROF_ALWAYS_INLINE void alloc(std::uint32_t site, std::uint32_t type, std::uint64_t addr, std::uint64_t size) {
    struct __attribute__((packed)) Rec { std::uint8_t tag; std::uint32_t site, type; std::uint64_t addr, size; };
    static_assert(sizeof(Rec) == trace::kAllocBytes);
    const Rec r{static_cast<std::uint8_t>(trace::Tag::kAlloc), site, type, addr, size};
    std::memcpy(reserve(sizeof r), &r, sizeof r);
  }
  OBJPROF_ALWAYS_INLINE void move(std::uint64_t from, std::uint64_t to) {
    struct __attribute__((packed)) Rec { std::uint8_t tag; std::uint64_t from, to; };
    static_assert(sizeof(Rec) == trace::kMoveBytes);
    const Rec r{static_cast<std::uint8_t>(trace::Tag::kMove), from, to};
    std::memcpy(reserve(sizeof r), &r, sizeof r);
  }
  OBJPROF_ALWAYS_INLINE void move_range(std::uint64_t from, std::uint64_t to, std::uint64_t bytes) {
    struct __attribute__((packed)) Rec { std::uint8_t tag; std::uint64_t from, to, bytes; };
    static_assert(sizeof(Rec) == trace::kMoveRangeBytes);
    const Rec r{static_cast<std::uint8_t>(trace::Tag::kMoveRange), from, to, bytes};
    std::memcpy(reserve(sizeof r), &r, sizeof r);
  }
  OBJPROF_ALWAYS_INLINE void free(std::uint64_t addr) {
    struct __attribute__((packed)) Rec { std::uint8_t tag; std::uint64_t addr; };
    static_assert(sizeof(Rec) == trace::kFreeBytes);
    const Rec r{static_cast<std::uint8_t>(trace::Tag::kFree), addr};
    std::memcpy(reserve(sizeof r), &r, sizeof r);
  }
  void free_range(std::uint64_t addr, std::uint64_t bytes) {
    struct __attribute__((packed)) Rec { std::uint8_t tag; std::uint64_t addr, bytes; };
    static_assert(sizeof(Rec) == trace::kFreeRangeBytes);
    const Rec r{static_cast<std::uint8_t>(trace::Tag::kFreeRange), addr, bytes};
    std::memcpy(reserve(sizeof r), &r, sizeof r);
  }

  OBJPROF_ALWAYS_INLINE void resize(std::uint64_t addr, std::uint64_t bytes) {
    struct __attribute__((packed)) Rec { std::uint8_t tag; std::uint64_t addr, bytes; };
    static_assert(sizeof(Rec) == trace::kResizeBytes);
    const Rec r{static_cast<std::uint8_t>(trace::Tag::kResize), addr, bytes};
    std::memcpy(reserve(sizeof r), &r, sizeof r);
  }

  // Generic record building for the rare records (definitions, GC, bitmap dumps).
  // begin_record reserves `bytes` contiguous bytes (bytes <= capacity()).
  std::uint8_t* begin_record(std::size_t bytes) { return reserve(bytes); }
  static std::uint8_t* put_u8(std::uint8_t* p, std::uint8_t v) { *p = v; return p + 1; }
  static std::uint8_t* put_u16(std::uint8_t* p, std::uint16_t v) { std::memcpy(p, &v, 2); return p + 2; }
  static std::uint8_t* put_u32(std::uint8_t* p, std::uint32_t v) { std::memcpy(p, &v, 4); return p + 4; }
  static std::uint8_t* put_u64(std::uint8_t* p, std::uint64_t v) { std::memcpy(p, &v, 8); return p + 8; }
  // Strings longer than trace::kMaxString are cut to that length.
  static std::size_t string_bytes(std::string_view s) { return 2 + std::min(s.size(), trace::kMaxString); }
  static std::uint8_t* put_string(std::uint8_t* p, std::string_view s);

  // Frames and writes the pending records as one chunk (no-op when empty).
  void flush();

 private:
  OBJPROF_ALWAYS_INLINE std::uint8_t* reserve(std::size_t n) {
    if (OBJPROF_UNLIKELY(static_cast<std::size_t>(end_ - pos_) < n)) flush_for(n);
    std::uint8_t* p = pos_;
    pos_ += n;
    return p;
  }
  OBJPROF_NOINLINE void flush_for(std::size_t n);

  TraceWriter* writer_;
  std::uint32_t stream_;
  std::unique_ptr<std::uint8_t[]> storage_;  // chunk header + payload
  std::uint8_t* payload_;
  std::uint8_t* pos_;
  std::uint8_t* end_;
};

}  // namespace objprof
