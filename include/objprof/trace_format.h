// The objprof trace format, version 8: constants and record layouts shared by the writer
// (event_buffer.h, trace_writer.h) and the reader (trace_reader.h). docs/trace-format.md is
// the prose version of this file; keep the two in step.
//
//   file    := preamble chunk*
//   preamble:= "OBJPRTRC" u32 version u32 flags                       (16 bytes)
//   chunk   := u32 magic "CHNK" u32 payload_bytes u32 crc32c u32 stream u64 epoch payload
//              crc32c covers stream, epoch and payload (bytes 12.. of the chunk)
//   payload := record*           record := u8 tag, then the tag's fields (little endian, packed)
//
// A chunk is written whole or not at all from the reader's point of view: a file cut short
// ends in a partial chunk, which the reader reports and skips; every earlier chunk is intact.
#pragma once

#include <cstddef>
#include <cstdint>

namespace objprof::trace {

inline constexpr char kMagic[8] = {'O', 'B', 'J', 'P', 'R', 'T', 'R', 'C'};
inline constexpr std::uint32_t kVersion = 8;
// Version 1 is version 2 without resize records, version 2 is version 3 without path records,
// version 3 is version 4 without free-range records, version 4 is version 5 without packed
// records, version 5 is version 6 without packed bitmap dumps, version 6 is version 7 without
// bitmap runs, version 7 is version 8 without granule moves; the reader reads all eight. The
// writer writes packed alloc, move, free and resize records from version 5 on, sparse bitmap
// dumps packed in version 6, every bitmap dump as runs from version 7 on, and moves as granule
// moves from version 8 on (the older forms stay readable; a packed move where a granule move
// cannot hold the deltas).
inline constexpr std::uint32_t kMinVersion = 1;
inline constexpr std::size_t kPreambleBytes = 16;

inline constexpr std::uint32_t kChunkMagic = 0x4B4E4843;  // "CHNK" little endian
inline constexpr std::size_t kChunkHeaderBytes = 24;
// The reader refuses larger chunks before allocating anything for them.
inline constexpr std::uint32_t kMaxChunkPayload = 64u << 20;
inline constexpr std::size_t kDefaultChunkPayload = 64u << 10;

// Streams: 0 is the profiler's control stream (definitions, GC records, bitmap dumps);
// 1 carries collector-side events (moves, frees); thread t writes stream kThreadStreamBase + t.
inline constexpr std::uint32_t kControlStream = 0;
inline constexpr std::uint32_t kCollectorStream = 1;
inline constexpr std::uint32_t kThreadStreamBase = 16;

enum class Tag : std::uint8_t {
  kHeader = 1,        // u32 granule_bytes, u16 space_count, {u32 id, u64 begin, u64 end, str name}*
  kTypeDef = 2,       // u32 id, u64 instance_size, u8 is_array, str name
  kSiteDef = 3,       // u32 id, u64 pc, u32 bytecode_offset, str method
  kThreadDef = 4,     // u32 id, str name
  kAlloc = 5,         // u32 site, u32 type, u64 addr, u64 size          (thread = chunk stream)
  kMove = 6,          // u64 from, u64 to
  kMoveRange = 7,     // u64 from, u64 to, u64 bytes
  kFree = 8,          // u64 addr
  kGcBegin = 9,       // u64 epoch, u8 kind, u64 bytes_allocated
  kGcEnd = 10,        // u64 epoch, u64 bytes_allocated
  kBitmapDense = 11,  // u32 space, u64 first_word, u32 word_count, u64 word*
  kBitmapSparse = 12, // u32 space, u32 count, {u64 word_index, u64 word}*
  kThreadEnd = 13,    // u32 id
  kStale = 14,        // u64 addr, u64 last_access_epoch, u64 epoch      (online leak report)
  kEnd = 15,          // u64 epoch, u64 bytes_allocated                  (clean end of trace)
  kResize = 16,       // u64 addr, u64 bytes: the object's footprint now  (thread = chunk stream; v2)
  // A path from a GC root to a stale sample object of (site, type), searched at gc_end (v3):
  //   u64 epoch, u32 site, u32 type, u64 target, u8 status (PathStatus), u64 objects_visited,
  //   u8 root_kind (RootKind), str root_name, u32 total_steps, u16 step_count,
  //   {u64 addr, u32 type, str via}*step_count          (the first steps of total_steps)
  kPath = 17,
  // Every object that starts in [addr, addr + bytes) died in this GC (a sweep's run of dead
  // cells as one record; the range may cover free memory too). u64 addr, u64 bytes (v4)
  kFreeRange = 18,
  // Packed forms of the four hot records (v5): the same fields, as varints, with addresses as
  // deltas from the chunk's previous address (see "Packed records" below).
  kAllocPacked = 19,   // uvar site, uvar type, addr addr, uvar size     (thread = chunk stream)
  kMovePacked = 20,    // addr from, to_addr to (delta from the chunk's previous move's `to`)
  kFreePacked = 21,    // addr addr
  kResizePacked = 22,  // addr addr, uvar bytes                          (thread = chunk stream)
  // An alloc and, right after it in the same chunk, a resize of the same object (a table
  // built by a constructor): uvar site, uvar type, addr addr, uvar size, uvar bytes (v5)
  kAllocResized = 23,
  // kBitmapSparse packed (v6): uvar space, uvar count, then count entries of uvar delta, u64
  // word, where the first delta is the first entry's word index and each later one (at least 1)
  // the distance from the entry before. A harvest's marked words are near each other: a few
  // bytes of index instead of 8.
  kBitmapPacked = 24,
  // A bitmap dump as runs of consecutive words (v7): uvar space, uvar count, then count runs of
  // uvar gap, uvar words (at least 1), u64 word * words. The first run starts at word `gap`,
  // each later one `gap` words after the end of the run before. Zero words inside a run are
  // allowed and mean nothing. A harvest's marks cluster (the objects a program works on): the
  // words themselves, copied, plus a few bytes per run, where the packed form took 9-10 bytes
  // per word and the dense form 8 per word of the whole window.
  kBitmapRuns = 25,
  // A move as two fixed-width deltas (v8): i32 from, i32 to, each in 8-byte units from the same
  // `prev` as a packed move's (the chunk's previous address for `from`, its previous move
  // destination for `to`), which become them. Nine bytes where a packed move takes 3-7, for
  // no branch per varint byte: a copying collector reports every survivor, and the packed
  // form's two varints were ~40 of its ~85 instructions a move. A delta that is not a multiple
  // of 8 or does not fit 32 bits falls back to the packed form.
  kMoveGranules = 26,
};

inline constexpr std::uint8_t kMaxTag = 26;

// Packed records (version 5). Most objects are small and are allocated, resized and freed near
// the previous one, so their records are a few bytes instead of 9–25.
//   uvar  unsigned LEB128: 7 bits per byte, low group first, high bit set on all bytes but the
//         last; at most 10 bytes, and bits above 64 must be zero.
//   addr  an address as a delta from the chunk's previous address `prev` (0 at the start of
//         every chunk, so each chunk decodes on its own): with d = addr - prev (mod 2^64),
//         a multiple of 8 is uvar(zigzag(d / 8) << 1) (even); any other d is the byte 0x01
//         followed by the address as a u64. Every packed record's address (a move's `from`)
//         becomes the new `prev`.
//   to    a move's destination, the same way but from the chunk's previous move destination
//         (0 at the start of every chunk): a copying collector's destinations are consecutive.
inline constexpr std::size_t kMaxUvarBytes = 10;
inline constexpr std::size_t kMaxAddrBytes = 9;
inline constexpr std::size_t kMaxAllocPackedBytes = 1 + 5 + 5 + kMaxAddrBytes + kMaxUvarBytes;
inline constexpr std::size_t kMaxMovePackedBytes = 1 + 2 * kMaxAddrBytes;
inline constexpr std::size_t kMaxFreePackedBytes = 1 + kMaxAddrBytes;
inline constexpr std::size_t kMaxResizePackedBytes = 1 + kMaxAddrBytes + kMaxUvarBytes;
// A granule move (tag 26): the deltas d = addr - prev (mod 2^64) it can hold are the multiples
// of 8 in [-kMoveGranuleSpan, kMoveGranuleSpan), so that d / 8 fits an i32.
inline constexpr std::uint64_t kMoveGranuleSpan = std::uint64_t{1} << 34;
inline constexpr std::size_t kMoveGranulesBytes = 1 + 4 + 4;

constexpr std::uint64_t zigzag(std::int64_t v) noexcept {
  return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}
constexpr std::int64_t unzigzag(std::uint64_t v) noexcept {
  return static_cast<std::int64_t>(v >> 1) ^ -static_cast<std::int64_t>(v & 1);
}
// Strings are u16 length + bytes (no terminator).
inline constexpr std::size_t kMaxString = 0xFFFF;

// Bounds the reader enforces on values (docs/trace-format.md, "Bounds"): an object or type is
// at most 2^48 bytes (256 TiB), and every bytes-allocated total, the running sum of alloc sizes
// included, is at most 2^62, so sums and differences of them never overflow 64-bit arithmetic.
inline constexpr std::uint64_t kMaxObjectBytes = std::uint64_t{1} << 48;
inline constexpr std::uint64_t kMaxBytesAllocated = std::uint64_t{1} << 62;

// Fixed record sizes (tag byte included) of the hot records' unpacked forms.
inline constexpr std::size_t kAllocBytes = 1 + 4 + 4 + 8 + 8;
inline constexpr std::size_t kMoveBytes = 1 + 8 + 8;
inline constexpr std::size_t kMoveRangeBytes = 1 + 8 + 8 + 8;
inline constexpr std::size_t kFreeBytes = 1 + 8;
inline constexpr std::size_t kFreeRangeBytes = 1 + 8 + 8;
inline constexpr std::size_t kResizeBytes = 1 + 8 + 8;

enum class GcKind : std::uint8_t {
  kMinor = 0,      // young generation / nursery
  kFull = 1,       // whole heap, stop the world
  kConcurrent = 2, // concurrent mark-sweep cycle
  kCopying = 3,    // semi-space copy
  kCompacting = 4, // sliding compaction
};

const char* gc_kind_name(GcKind kind) noexcept;

inline const char* gc_kind_name(GcKind kind) noexcept {
  switch (kind) {
    case GcKind::kMinor: return "minor";
    case GcKind::kFull: return "full";
    case GcKind::kConcurrent: return "concurrent";
    case GcKind::kCopying: return "copying";
    case GcKind::kCompacting: return "compacting";
  }
  return "unknown";
}

}  // namespace objprof::trace
