// PendingMarks: MarkMode::kBuffered's per-thread state — the one bitmap word a thread is
// marking into and the bits it has set there that the shared bitmap does not show yet.
//
// Why: a racy mark (load, or, store of a shared byte) loses a bit when two threads mark the
// same byte at once, and a locked fetch-or on every first touch costs ~5x a racy mark. Marks
// that land in the word of the previous mark (64 granules: 512 bytes of heap at K = 8) are
// collected in a register-like field of the marking thread; only when it moves to another
// word are they ORed into the bitmap, with one fetch-or (skipped when the bits are there
// already). Nothing is lost: the bits are either in the owner's PendingMarks or merged
// atomically. The profiler merges every thread's pending bits at gc_begin, before the bitmap
// is harvested (its mutators are at a safepoint), and at detach_thread.
//
// The cost: a reader of the live bitmap between GCs (AccessBitmap::test, a shared-memory
// viewer) does not see up to one word of each thread's latest marks.
#pragma once

#include "objprof/config.h"

#include <atomic>
#include <bit>
#include <cstdint>

namespace objprof {

struct PendingMarks {
  // Owner-thread fields, relaxed atomics (plain moves) so the profiler's merge at a safepoint
  // is well defined.
  std::atomic<std::uint64_t*> word{nullptr};  // the bitmap word being filled, or null
  std::atomic<std::uint64_t> bits{0};         // bits set in it since, maybe not in the bitmap

  // Marks `granule` of the bitmap at `base` (8-byte aligned, whole words: AccessBitmap's).
  OBJPROF_ALWAYS_INLINE void mark(std::uint8_t* base, std::uint64_t granule) noexcept {
    std::uint64_t* w = reinterpret_cast<std::uint64_t*>(base) + (granule >> 6);
    const std::uint64_t bit = std::uint64_t{1} << (granule & 63);
    if (OBJPROF_LIKELY(w == word.load(std::memory_order_relaxed))) {
      bits.store(bits.load(std::memory_order_relaxed) | bit, std::memory_order_relaxed);
      return;
    }
    // Another word. Already marked (an object used again in the epoch): nothing to keep, and
    // the cost is the racy mode's load. Otherwise this word becomes the pending one.
    if (std::atomic_ref<std::uint64_t>(*w).load(std::memory_order_relaxed) & bit) return;
    start(w, bit);
  }

  // Out of line: once per word of first touches, not per mark.
  OBJPROF_NOINLINE void start(std::uint64_t* w, std::uint64_t bit) noexcept {
    merge();
    word.store(w, std::memory_order_relaxed);
    bits.store(bit, std::memory_order_relaxed);
  }

  // ORs the pending bits into the bitmap and empties this. Called by the owner (on a change of
  // word) or, while the owner is stopped, by the profiler.
  void merge() noexcept {
    std::uint64_t* w = word.load(std::memory_order_relaxed);
    const std::uint64_t b = bits.load(std::memory_order_relaxed);
    if (w != nullptr && b != 0) {
      // Little endian (x86_64, arm64): bit g & 63 of word g >> 6 is bit g & 7 of byte g >> 3,
      // the layout the other modes' byte marks use.
      std::atomic_ref<std::uint64_t> shared(*w);
      if ((shared.load(std::memory_order_relaxed) & b) != b) shared.fetch_or(b, std::memory_order_relaxed);
    }
    word.store(nullptr, std::memory_order_relaxed);
    bits.store(0, std::memory_order_relaxed);
  }
};

static_assert(std::endian::native == std::endian::little, "bitmap words are read as little-endian bytes");
static_assert(std::atomic<std::uint64_t*>::is_always_lock_free && std::atomic<std::uint64_t>::is_always_lock_free);

}  // namespace objprof
