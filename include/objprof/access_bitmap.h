// AccessBitmap: one bit per K-byte granule of a HeapSpace (heap/64 at K = 8), set by access
// barriers and harvested once per GC epoch.
//
// Double buffering: the barrier finds the active buffer through BarrierDescriptor::bitmap.
// snapshot_and_clear() swaps a zeroed spare buffer in with one atomic pointer exchange (the
// only mutator-visible cost, independent of heap size) and hands the retired buffer out as a
// BitmapSnapshot. Destroying the snapshot clears that buffer and returns it to the pool, off
// the mutators' path. A mark that raced with the swap lands in the retired buffer and is
// counted in the epoch that just ended, which is where the access happened.
//
// Memory comes from mmap (zero pages, no up-front cost) unless the embedder supplies buffers,
// e.g. from a shared-memory segment (shared_segment.h).
//
// Thread safety: mark_* from any number of threads; snapshot_and_clear from one thread at a
// time (the collector); a snapshot may be read and destroyed on any thread.
#pragma once

#include "objprof/barrier_descriptor.h"
#include "objprof/config.h"
#include "objprof/heap_space.h"
#include "objprof/result.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <vector>

namespace objprof {

enum class MarkMode : std::uint8_t {
  kRacy,             // plain byte load, or, store (the seeds' sequence); a concurrent mark of
                     // the same byte by another thread can be lost
  kAtomic,           // relaxed byte fetch-or: x86 `lock or`, arm64 LSE `ldsetb`/`stsetb`
  kAtomicTestFirst,  // load the byte first and skip the fetch-or if the bit is already set
  kBuffered,         // the marking thread collects the bits of one word and ORs them in with
                     // one fetch-or when it moves to another word: no bit lost, no locked
                     // instruction per mark (pending_marks.h). The C++ barrier with a
                     // ThreadState; with a VM's BarrierSlot it is kAtomicTestFirst.
  kRacyTestFirst,    // plain byte load; the or and store only if the bit is clear. Loses what
                     // kRacy loses, and stores nothing on a repeated mark: a loop over a few
                     // objects with no cache in front (Lua's table accesses) then reads its
                     // bitmap bytes instead of chaining stores and reloads through them.
                     // Last: the values before it keep their numbers.
};

const char* mark_mode_name(MarkMode mode) noexcept;

class BitmapSnapshot;

class AccessBitmap {
 public:
  // Memory supplied by the embedder: `count` buffers of at least bytes_for(space) bytes each,
  // zero-filled, outliving the bitmap. At least two for double buffering.
  struct ExternalBuffers {
    std::uint8_t* buffers[2] = {nullptr, nullptr};
    // Optional: where the index of the active buffer (0/1) is published for live readers.
    std::atomic<std::uint32_t>* active_index = nullptr;
  };

  // Bytes one buffer needs for `space`, rounded up to whole 64-bit words.
  static std::size_t bytes_for(const HeapSpace& space) noexcept;

  static Result<std::unique_ptr<AccessBitmap>> create(const HeapSpace& space);
  static Result<std::unique_ptr<AccessBitmap>> create(const HeapSpace& space, ExternalBuffers buffers);

  ~AccessBitmap();
  AccessBitmap(const AccessBitmap&) = delete;
  AccessBitmap& operator=(const AccessBitmap&) = delete;

  const HeapSpace& space() const noexcept { return space_; }
  std::size_t size_bytes() const noexcept { return bytes_; }
  const BarrierDescriptor& descriptor() const noexcept { return desc_; }
  BarrierDescriptor& descriptor() noexcept { return desc_; }

  // Marks the granule of `addr`. Precondition: space().contains(addr).
  template <MarkMode kMode>
  OBJPROF_ALWAYS_INLINE void mark(Address addr) noexcept {
    std::uint64_t g = (addr - desc_.begin) >> desc_.log2_granule;
    mark_granule<kMode>(desc_.bitmap.load(std::memory_order_relaxed), g);
  }

  template <MarkMode kMode>
  OBJPROF_ALWAYS_INLINE static void mark_granule(std::uint8_t* base, std::uint64_t granule) noexcept {
    static_assert(kMode != MarkMode::kBuffered, "buffered marks need the marking thread's PendingMarks");
    // atomic_ref keeps the racy variant free of undefined behaviour (and of TSan reports)
    // while still compiling to a plain load, or, store.
    std::atomic_ref<std::uint8_t> byte(base[granule >> 3]);
    const auto bit = static_cast<std::uint8_t>(1u << (granule & 7));
    if constexpr (kMode == MarkMode::kRacy) {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
      // The same plain read-modify-write as one instruction: GCC does not fuse a relaxed atomic
      // load and store into `or` to memory, and the three instructions it emits instead are
      // most of an inline barrier's extra length (Lua's table accesses: 21 -> 19). Sanitizer
      // builds keep the atomic_ref form, which they can see.
      // The bit's mask without masking its index: an 8-bit rotate by cl counts modulo 8, so
      // `rolb %cl` of 1 is 1 << (granule & 7) in two instructions where a shift needs an `and`
      // first (Lua's table barriers: 14 -> 13 instructions).
      (void)byte;
      (void)bit;
      std::uint8_t mask = 1;
      asm("rolb %%cl, %0" : "+q"(mask) : "c"(static_cast<std::uint8_t>(granule)));
      asm("orb %1, %0" : "+m"(base[granule >> 3]) : "q"(mask));
#else
      byte.store(static_cast<std::uint8_t>(byte.load(std::memory_order_relaxed) | bit), std::memory_order_relaxed);
#endif
    } else if constexpr (kMode == MarkMode::kRacyTestFirst) {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
      // The test against memory (GCC loads a relaxed atomic into a register first: one
      // instruction more per mark), then kRacy's `or` only where the bit is clear.
      (void)byte;
      (void)bit;
      std::uint8_t mask = 1;
      asm("rolb %%cl, %0" : "+q"(mask) : "c"(static_cast<std::uint8_t>(granule)));
      asm goto("testb %1, %0\n\tjnz %l2" : : "m"(base[granule >> 3]), "q"(mask) : "cc" : marked);
      asm("orb %1, %0" : "+m"(base[granule >> 3]) : "q"(mask));
    marked:;
#else
      if (const std::uint8_t v = byte.load(std::memory_order_relaxed); !(v & bit))
        byte.store(static_cast<std::uint8_t>(v | bit), std::memory_order_relaxed);
#endif
    } else if constexpr (kMode == MarkMode::kAtomic) {
      byte.fetch_or(bit, std::memory_order_relaxed);
    } else {
      if (!(byte.load(std::memory_order_relaxed) & bit)) byte.fetch_or(bit, std::memory_order_relaxed);
    }
  }

  // True if the granule of `addr` is marked in the active buffer. Out-of-range: false.
  bool test(Address addr) const noexcept;
  // Number of set bits in the active buffer.
  std::uint64_t count() const noexcept;

  // A space reserved large and filled from its start as the runtime grows (a heap that
  // commits as it goes, an arena): only its first `space_bytes` bytes hold objects so far,
  // so harvests scan and clear only their part of the bitmap. It only grows (a smaller value
  // is ignored); the runtime must call it before placing an object beyond the old extent.
  // By default the whole space is in use; the first call, made before any object is placed,
  // replaces that default.
  void set_used(std::uint64_t space_bytes) noexcept;
  // The other end of the same window: no object starts below `space_offset` (bytes from the
  // space's start) so far, so harvests skip the bitmap below it too. An allocator that carves
  // its blocks from their top down (oneTBB's pool does) leaves the low part of a region empty
  // for long. It only decreases (a larger value is ignored); the runtime must call it before
  // placing an object below the old mark. By default harvests start at the space's start; the
  // first call, made before any object is placed, replaces that default. A mark below the
  // window breaks that contract and is neither harvested nor cleared (the profiler's hook
  // checks find it: BitmapSnapshot::clear_outside_window).
  void set_used_from(std::uint64_t space_offset) noexcept;
  // The whole window at once, [space_offset, space_bytes) of the space, narrowed or moved as
  // well as widened (set_used and set_used_from only widen it): for a runtime whose objects
  // change regions, such as a semispace collector whose mutators reach only the half it copied
  // into (and its large objects). The epoch's marks so far and every mark until the next
  // harvest must lie inside the new window: call it while no mutator runs, after the epoch's
  // harvest (Profiler::set_space_window allows it only inside a GC bracket). set_used and
  // set_used_from widen it again from there.
  void set_window(std::uint64_t space_offset, std::uint64_t space_bytes) noexcept;
  // Bitmap bytes a harvest covers now: [used_from_byte(), used_bytes()) (empty when the first
  // is not below the second).
  std::size_t used_bytes() const noexcept { return used_bytes_.load(std::memory_order_acquire); }
  std::size_t used_from_byte() const noexcept { return used_from_.load(std::memory_order_acquire); }

  // Swaps in a zeroed buffer and returns the bits of the epoch that just ended. The bitmap
  // is all zero afterwards. Holding more than one snapshot at a time makes the bitmap mmap an
  // extra buffer (with external buffers that extra buffer is private to this process).
  Result<BitmapSnapshot> snapshot_and_clear();

 private:
  friend class BitmapSnapshot;
  struct Buffer {
    std::uint8_t* data = nullptr;
    bool owned = false;   // munmap on destruction
    int external_index = -1;
  };

  AccessBitmap(const HeapSpace& space, std::size_t bytes);
  // Called by ~BitmapSnapshot: clear bytes [first, end) (the snapshot's window) and return the
  // buffer to the pool.
  void release(Buffer buffer, std::size_t first, std::size_t end) noexcept;
  // The bitmap byte where a window that starts `space_offset` bytes into the space starts (down
  // to a whole word), and where one that ends at `space_bytes` ends (up to a whole word), both
  // at most the bitmap's size.
  std::size_t window_from_byte(std::uint64_t space_offset) const noexcept;
  std::size_t window_end_byte(std::uint64_t space_bytes) const noexcept;

  BarrierDescriptor desc_;  // first member: hot fields on the first cache line
  HeapSpace space_;
  std::size_t bytes_ = 0;
  std::atomic<std::size_t> used_bytes_{0};
  std::atomic<bool> used_set_{false};
  std::atomic<std::size_t> used_from_{0};  // a multiple of 8
  std::atomic<bool> used_from_set_{false};
  Buffer active_;
  std::mutex pool_mutex_;  // guards spares_ (collector side only)
  std::vector<Buffer> spares_;
  std::atomic<std::uint32_t>* active_index_ = nullptr;
  std::vector<Buffer> all_owned_;  // every owned buffer, for munmap
};

// How a snapshot's scan finds its non-zero words (count(), nonzero_words()): portable C++; with
// the POPCNT instruction; or with AVX2 skipping 64 zero bytes per test (x86_64). The best path
// the CPU runs is chosen once; the environment variable OBJPROF_BITMAP_SCAN=portable|popcnt|avx2
// forces one (a path this CPU cannot run falls back to the best, with a message on stderr).
// Every path gives the same answer (tests force each).
enum class BitmapScan : std::uint8_t { kPortable, kPopcnt, kAvx2 };
inline constexpr BitmapScan kAllBitmapScans[] = {BitmapScan::kPortable, BitmapScan::kPopcnt, BitmapScan::kAvx2};
bool bitmap_scan_supported(BitmapScan path) noexcept;
BitmapScan bitmap_scan_path() noexcept;
std::string_view bitmap_scan_name(BitmapScan path) noexcept;
Result<BitmapScan> bitmap_scan_from_name(std::string_view name);

// The bits of one epoch. Move-only; destruction clears the buffer and returns it to its bitmap.
// Must not outlive the AccessBitmap.
class BitmapSnapshot {
 public:
  BitmapSnapshot(BitmapSnapshot&& other) noexcept;
  BitmapSnapshot& operator=(BitmapSnapshot&& other) noexcept;
  ~BitmapSnapshot();

  const HeapSpace& space() const noexcept { return owner_->space(); }
  std::span<const std::uint8_t> bytes() const noexcept { return {data_, size_}; }
  // Where the window that may hold marks starts in bytes() (AccessBitmap::set_used_from): every
  // byte before it is zero. A multiple of 8.
  std::size_t first_byte() const noexcept { return first_; }
  bool test(Address addr) const noexcept;
  bool test_granule(std::uint64_t granule) const noexcept {
    return (granule >> 3) < size_ && ((data_[granule >> 3] >> (granule & 7)) & 1);
  }
  std::uint64_t count() const noexcept;
  // One pass over the bits: appends (word index, word) for every non-zero 64-bit word to
  // `out` (cleared first) and returns the number of marked granules. Word i covers granules
  // 64i .. 64i+63.
  std::uint64_t nonzero_words(std::vector<std::pair<std::uint64_t, std::uint64_t>>& out) const;
  // The same on a chosen path (it must be bitmap_scan_supported), for tests and benchmarks.
  std::uint64_t nonzero_words_with(BitmapScan path, std::vector<std::pair<std::uint64_t, std::uint64_t>>& out) const;

  // A run of consecutive non-zero words: words [first, first + words) of bytes().
  struct MarkedRun {
    std::uint64_t first;
    std::uint64_t words;
    bool operator==(const MarkedRun&) const = default;
  };
  // One pass over the bits: appends every maximal run of non-zero 64-bit words to `out`
  // (cleared first), in increasing order, and returns the number of marked granules. This is
  // what the profiler dumps into the trace at each GC: the runs' words as they are, so a dense
  // harvest (a small heap of large objects) costs a copy, not an entry per word.
  std::uint64_t marked_runs(std::vector<MarkedRun>& out) const;
  // The same on a chosen path (it must be bitmap_scan_supported), for tests and benchmarks.
  std::uint64_t marked_runs_with(BitmapScan path, std::vector<MarkedRun>& out) const;
  // Zeroes the given runs (those marked_runs() found), one fill each, or one fill from the
  // first to the last where the gaps between them are small. After it the snapshot reads as
  // empty.
  void clear_runs(const std::vector<MarkedRun>& runs) noexcept;

  // Zeroes the given words (those nonzero_words() found: all the marked ones, in increasing
  // order), so returning the buffer to its bitmap costs what was marked instead of a clear of
  // the whole used part: one by one, or, where at least one word in 16 between the first and
  // the last is listed, by one fill of that span. After it the snapshot reads as empty.
  void clear_words(const std::vector<std::pair<std::uint64_t, std::uint64_t>>& nonzero) noexcept;
  // One pass for a harvest that needs no word list (nothing dumps the bits): returns the number
  // of marked granules and zeroes the marked words, so the buffer goes back clean at the cost of
  // reading it once and writing what was marked. After it the snapshot reads as empty.
  std::uint64_t count_and_clear() noexcept;
  // The same on a chosen path (one this CPU cannot run falls back to the best), for tests.
  std::uint64_t count_and_clear_with(BitmapScan path) noexcept;
  // Marks outside the window (the runtime marked an object it had not declared with
  // set_used / set_used_from): returns how many granules and zeroes them, so the buffer still
  // goes back clean. A full pass over the bitmap: for hook checks, not for every harvest.
  std::uint64_t clear_outside_window() noexcept;

  // Calls fn(Address) for every marked granule, in address order.
  template <class Fn>
  void for_each_marked(Fn&& fn) const {
    const HeapSpace& s = space();
    for (std::size_t w = first_ / 8; w < size_ / 8; ++w) {
      std::uint64_t word;
      __builtin_memcpy(&word, data_ + w * 8, 8);
      while (word) {
        const int bit = __builtin_ctzll(word);  // little-endian: byte i bit j is word bit 8i+j
        word &= word - 1;
        fn(s.address_of(w * 64 + static_cast<std::uint64_t>(bit)));
      }
    }
  }

 private:
  friend class AccessBitmap;
  BitmapSnapshot(AccessBitmap* owner, AccessBitmap::Buffer buffer, std::size_t first, std::size_t size)
      : owner_(owner), buffer_(buffer), data_(buffer.data), first_(std::min(first, size)), size_(size) {}

  AccessBitmap* owner_ = nullptr;
  AccessBitmap::Buffer buffer_;
  const std::uint8_t* data_ = nullptr;
  std::size_t first_ = 0;  // the window [first_, size_) of bytes that may hold marks
  std::size_t size_ = 0;
  bool clean_ = false;  // clear_words() or clear_runs() left the buffer all zero
};

inline const char* mark_mode_name(MarkMode mode) noexcept {
  switch (mode) {
    case MarkMode::kRacy: return "racy";
    case MarkMode::kAtomic: return "atomic";
    case MarkMode::kAtomicTestFirst: return "atomic-test-first";
    case MarkMode::kBuffered: return "buffered";
    case MarkMode::kRacyTestFirst: return "racy-test-first";
  }
  return "?";
}

}  // namespace objprof
