// AccessBitmap slow paths: buffer management and the snapshot swap.
#include "objprof/access_bitmap.h"

#include "side_table_memory.h"

#include <sys/mman.h>

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

static_assert(std::endian::native == std::endian::little,
              "bitmap words are read as little-endian (byte i, bit j = word bit 8i+j)");

namespace objprof {
namespace {

std::uint8_t* map_zeroed(std::size_t bytes) { return static_cast<std::uint8_t*>(internal::map_side_table(bytes)); }

// Retired buffers are cleared with memset, not MADV_DONTNEED: returning pages to the kernel
// looks free here but moves the cost to the mutators, whose first marks in the next epoch
// would each take a page fault (measured: ~7 us per page, over 10x the memset).
void clear_buffer(std::uint8_t* data, std::size_t bytes) { std::memset(data, 0, bytes); }

}  // namespace

std::size_t AccessBitmap::bytes_for(const HeapSpace& space) noexcept {
  const std::uint64_t granules = space.granule_count();
  return static_cast<std::size_t>((granules + 63) / 64 * 8);
}

AccessBitmap::AccessBitmap(const HeapSpace& space, std::size_t bytes) : space_(space), bytes_(bytes), used_bytes_(bytes) {
  desc_.begin = space.begin();
  desc_.size = space.size();
  desc_.log2_granule = space.log2_alignment();
  // The scan path is chosen once per process (the environment read, the CPU asked): here, at
  // set-up, rather than inside the first GC's harvest (~400 instructions, 1 % of a short
  // collection's profiler share).
  (void)bitmap_scan_path();
}

Result<std::unique_ptr<AccessBitmap>> AccessBitmap::create(const HeapSpace& space) {
  const std::size_t bytes = bytes_for(space);
  std::unique_ptr<AccessBitmap> bm(new AccessBitmap(space, bytes));
  for (int i = 0; i < 2; ++i) {
    std::uint8_t* data = map_zeroed(bytes);
    if (!data)
      return make_error(ErrorCode::kIo, "cannot map " + std::to_string(bytes) +
                                            " bytes for the access bitmap: " + std::strerror(errno));
    Buffer b{data, true, -1};
    bm->all_owned_.push_back(b);
    if (i == 0) bm->active_ = b; else bm->spares_.push_back(b);
  }
  bm->desc_.bitmap.store(bm->active_.data, std::memory_order_release);
  return bm;
}

Result<std::unique_ptr<AccessBitmap>> AccessBitmap::create(const HeapSpace& space, ExternalBuffers buffers) {
  if (!buffers.buffers[0] || !buffers.buffers[1] || buffers.buffers[0] == buffers.buffers[1])
    return make_error(ErrorCode::kInvalidArgument, "access bitmap needs two distinct external buffers");
  std::unique_ptr<AccessBitmap> bm(new AccessBitmap(space, bytes_for(space)));
  bm->active_ = Buffer{buffers.buffers[0], false, 0};
  bm->spares_.push_back(Buffer{buffers.buffers[1], false, 1});
  bm->active_index_ = buffers.active_index;
  if (bm->active_index_) bm->active_index_->store(0, std::memory_order_release);
  bm->desc_.bitmap.store(bm->active_.data, std::memory_order_release);
  return bm;
}

AccessBitmap::~AccessBitmap() {
  for (const Buffer& b : all_owned_) munmap(b.data, bytes_);
}

bool AccessBitmap::test(Address addr) const noexcept {
  if (!space_.contains(addr)) return false;
  const std::uint64_t g = space_.granule_of(addr);
  const std::uint8_t* base = desc_.bitmap.load(std::memory_order_acquire);
  std::atomic_ref<const std::uint8_t> byte(base[g >> 3]);
  return (byte.load(std::memory_order_relaxed) >> (g & 7)) & 1;
}

std::uint64_t AccessBitmap::count() const noexcept {
  const std::uint8_t* base = desc_.bitmap.load(std::memory_order_acquire);
  std::uint64_t n = 0;
  for (std::size_t i = 0; i < bytes_; ++i)
    n += static_cast<std::uint64_t>(std::popcount(std::atomic_ref<const std::uint8_t>(base[i]).load(std::memory_order_relaxed)));
  return n;
}

Result<BitmapSnapshot> AccessBitmap::snapshot_and_clear() {
  Buffer next;
  {
    std::lock_guard<std::mutex> lock(pool_mutex_);
    if (!spares_.empty()) {
      // Prefer a buffer of the shared segment so live readers keep seeing the active one.
      auto it = spares_.begin();
      for (auto s = spares_.begin(); s != spares_.end(); ++s)
        if (s->external_index >= 0) { it = s; break; }
      next = *it;
      spares_.erase(it);
    }
  }
  if (!next.data) {
    std::uint8_t* data = map_zeroed(bytes_);
    if (!data)
      return make_error(ErrorCode::kIo, std::string("cannot map a spare access bitmap buffer: ") + std::strerror(errno));
    next = Buffer{data, true, -1};
    std::lock_guard<std::mutex> lock(pool_mutex_);
    all_owned_.push_back(next);
  }
  // The swap: the only step mutators can observe. acq_rel pairs with the barrier's relaxed
  // load through the data dependency on the pointer it reads.
  Buffer old = active_;
  active_ = next;
  desc_.bitmap.exchange(next.data, std::memory_order_acq_rel);
  if (active_index_ && next.external_index >= 0)
    active_index_->store(static_cast<std::uint32_t>(next.external_index), std::memory_order_release);
  // Marks lie in the used window as it was when they were made, and it only widens until the
  // next harvest (set_window moves it only between a harvest and the mutators' next marks).
  return BitmapSnapshot(this, old, used_from_.load(std::memory_order_acquire), used_bytes_.load(std::memory_order_acquire));
}


namespace {

// One end of the harvest window: the first call sets it (replacing the default), later ones
// only widen the window (`wider(cur, want)`), whatever order racing threads call in.
template <class Wider>
void widen_window_end(std::atomic<std::size_t>& end, std::atomic<bool>& set, std::size_t want, Wider wider) noexcept {
  if (!set.exchange(true, std::memory_order_acq_rel)) {
    end.store(want, std::memory_order_release);
    return;
  }
  std::size_t cur = end.load(std::memory_order_relaxed);
  while (wider(cur, want) && !end.compare_exchange_weak(cur, want, std::memory_order_acq_rel)) {
  }
}

}  // namespace

std::size_t AccessBitmap::window_from_byte(std::uint64_t space_offset) const noexcept {
  const std::uint64_t granule_bits = std::uint64_t{8} << space_.log2_alignment();  // space bytes per bitmap byte
  return static_cast<std::size_t>(std::min<std::uint64_t>((space_offset / granule_bits) & ~std::uint64_t{7}, bytes_));
}

std::size_t AccessBitmap::window_end_byte(std::uint64_t space_bytes) const noexcept {
  const std::uint64_t granule_bits = std::uint64_t{8} << space_.log2_alignment();
  const std::uint64_t end = (space_bytes + granule_bits - 1) / granule_bits;
  return static_cast<std::size_t>(std::min<std::uint64_t>((end + 7) & ~std::uint64_t{7}, bytes_));
}

void AccessBitmap::set_used(std::uint64_t space_bytes) noexcept {
  widen_window_end(used_bytes_, used_set_, window_end_byte(space_bytes), [](std::size_t cur, std::size_t w) { return cur < w; });
}

void AccessBitmap::set_used_from(std::uint64_t space_offset) noexcept {
  widen_window_end(used_from_, used_from_set_, window_from_byte(space_offset),
                   [](std::size_t cur, std::size_t w) { return cur > w; });
}

void AccessBitmap::set_window(std::uint64_t space_offset, std::uint64_t space_bytes) noexcept {
  // Both ends replace whatever was there, the defaults included (mutators are stopped: no
  // set_used or set_used_from races with this).
  used_from_.store(window_from_byte(space_offset), std::memory_order_release);
  used_bytes_.store(window_end_byte(space_bytes), std::memory_order_release);
  used_from_set_.store(true, std::memory_order_release);
  used_set_.store(true, std::memory_order_release);
}

void AccessBitmap::release(Buffer buffer, std::size_t first, std::size_t end) noexcept {
  if (end > first) clear_buffer(buffer.data + first, end - first);
  std::lock_guard<std::mutex> lock(pool_mutex_);
  spares_.push_back(buffer);
}

BitmapSnapshot::BitmapSnapshot(BitmapSnapshot&& other) noexcept
    : owner_(other.owner_), buffer_(other.buffer_), data_(other.data_), first_(other.first_), size_(other.size_), clean_(other.clean_) {
  other.owner_ = nullptr;
  other.data_ = nullptr;
}

BitmapSnapshot& BitmapSnapshot::operator=(BitmapSnapshot&& other) noexcept {
  if (this != &other) {
    if (owner_) owner_->release(buffer_, first_, clean_ ? first_ : size_);
    owner_ = other.owner_;
    buffer_ = other.buffer_;
    data_ = other.data_;
    first_ = other.first_;
    size_ = other.size_;
    clean_ = other.clean_;
    other.owner_ = nullptr;
    other.data_ = nullptr;
  }
  return *this;
}

BitmapSnapshot::~BitmapSnapshot() {
  if (owner_) owner_->release(buffer_, first_, clean_ ? first_ : size_);
}

bool BitmapSnapshot::test(Address addr) const noexcept {
  const HeapSpace& s = space();
  if (!s.contains(addr)) return false;
  return test_granule(s.granule_of(addr));
}

namespace {

using WordList = std::vector<std::pair<std::uint64_t, std::uint64_t>>;

// What a scan does besides counting the marked granules: nothing, collect the non-zero words
// with their index, or zero them (only count() writes nothing: the others run on a snapshot,
// whose buffer is its own).
enum class ScanMode : std::uint8_t { kCount, kCollect, kClear };

// Words [begin, end). Compiled for the baseline ISA, where popcount is a libgcc call, and again
// per x86_64 path.
template <ScanMode kMode>
OBJPROF_ALWAYS_INLINE std::uint64_t scan_words(std::uint8_t* data, std::size_t begin, std::size_t end, WordList* out) {
  std::uint64_t n = 0;
  for (std::size_t w = begin; w < end; ++w) {
    std::uint64_t word;
    std::memcpy(&word, data + w * 8, 8);
    if (word == 0) continue;
    n += static_cast<std::uint64_t>(__builtin_popcountll(word));
    if constexpr (kMode == ScanMode::kCollect) out->emplace_back(w, word);
    if constexpr (kMode == ScanMode::kClear) std::memset(data + w * 8, 0, 8);
  }
  return n;
}

#if defined(__x86_64__)
template <ScanMode kMode>
__attribute__((target("popcnt"))) std::uint64_t scan_popcnt(std::uint8_t* data, std::size_t first, std::size_t words, WordList* out) {
  return scan_words<kMode>(data, first, words, out);
}

// The set bits of each byte of v (0-8), by a 16-entry table looked up per nibble.
__attribute__((target("avx2"))) inline __m256i popcount_bytes(__m256i v) {
  const __m256i table = _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4,  //
                                         0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4);
  const __m256i nibble = _mm256_set1_epi8(0x0f);
  const __m256i low = _mm256_and_si256(v, nibble);
  const __m256i high = _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble);
  return _mm256_add_epi8(_mm256_shuffle_epi8(table, low), _mm256_shuffle_epi8(table, high));
}

// Words w to w + 3 as a vector, and whether a vector is all zero (lambdas would not inherit the
// callers' target).
__attribute__((target("avx2"), always_inline)) inline __m256i load_words(const std::uint8_t* data, std::size_t w) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(data + w * 8));
}
__attribute__((target("avx2"), always_inline)) inline bool all_zero(__m256i v) { return _mm256_testz_si256(v, v) != 0; }

// One marked block of 64 bytes (words w to w + 7, also loaded as the vectors a and b) of a
// count or a clear: its marks added per byte to `bytes` (at most 16 per byte from one block)
// and, for kClear, the block zeroed.
template <ScanMode kMode>
__attribute__((target("avx2,popcnt"), always_inline)) inline void count_block_avx2(std::uint8_t* data, std::size_t w,
                                                                                    __m256i a, __m256i b, __m256i& bytes) {
  bytes = _mm256_add_epi8(bytes, _mm256_add_epi8(popcount_bytes(a), popcount_bytes(b)));
  if constexpr (kMode == ScanMode::kClear) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(data + w * 8), _mm256_setzero_si256());
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(data + w * 8 + 32), _mm256_setzero_si256());
  }
}

// A bitmap is mostly zero: for a count or a clear, one test per 256 bytes (32 words), then one
// per 64 bytes (8 words) of a span that holds marks; for a word list, one per 64 bytes. The
// words only where that fails. A block with marks is counted
// (and, to clear, zeroed) as two vectors when no word list is wanted: the harvest of a densely
// marked bitmap (a small heap of large objects, whose every block holds a mark: scimark's)
// took ~48 instructions a block word by word, ~20 this way. The per-byte counts of a span's
// blocks (at most 4 x 16 per byte) are summed into the four 64-bit lanes once per span. A
// zero span of 256 bytes costs ~20 instructions, where four tests of 64 took ~32 (a large heap
// with few marks: listleak's harvest is mostly zero spans).
template <ScanMode kMode>
__attribute__((target("avx2,popcnt"))) std::uint64_t scan_avx2(std::uint8_t* data, std::size_t first, std::size_t words, WordList* out) {
  std::uint64_t n = 0;
  __m256i lanes = _mm256_setzero_si256();  // kCount, kClear: four 64-bit sums of marks
  std::size_t w = first;
  // Spans for the count and the clear; the word list keeps blocks alone (with the spans, GCC
  // stopped inlining the list's resize: a call per marked block).
  if constexpr (kMode != ScanMode::kCollect) {
    for (; w + 32 <= words; w += 32) {
      const __m256i v0 = load_words(data, w), v1 = load_words(data, w + 4);
      const __m256i v2 = load_words(data, w + 8), v3 = load_words(data, w + 12);
      const __m256i v4 = load_words(data, w + 16), v5 = load_words(data, w + 20);
      const __m256i v6 = load_words(data, w + 24), v7 = load_words(data, w + 28);
      const __m256i b0 = _mm256_or_si256(v0, v1), b1 = _mm256_or_si256(v2, v3);
      const __m256i b2 = _mm256_or_si256(v4, v5), b3 = _mm256_or_si256(v6, v7);
      const __m256i all = _mm256_or_si256(_mm256_or_si256(b0, b1), _mm256_or_si256(b2, b3));
      if (all_zero(all)) continue;
      __m256i bytes = _mm256_setzero_si256();
      if (!all_zero(b0)) count_block_avx2<kMode>(data, w, v0, v1, bytes);
      if (!all_zero(b1)) count_block_avx2<kMode>(data, w + 8, v2, v3, bytes);
      if (!all_zero(b2)) count_block_avx2<kMode>(data, w + 16, v4, v5, bytes);
      if (!all_zero(b3)) count_block_avx2<kMode>(data, w + 24, v6, v7, bytes);
      lanes = _mm256_add_epi64(lanes, _mm256_sad_epu8(bytes, _mm256_setzero_si256()));
    }
  }
  for (; w + 8 <= words; w += 8) {
    const __m256i a = load_words(data, w), b = load_words(data, w + 4);
    if (all_zero(_mm256_or_si256(a, b))) continue;
    if constexpr (kMode == ScanMode::kCollect) {
      // Room for the block's eight words first, cut back after: written through a local
      // pointer, an entry costs ~7 instructions instead of emplace_back's ~17 (it reloaded
      // and stored the vector's end for every word; a trace's dump lists every marked word).
      const std::size_t at = out->size();
      out->resize(at + 8);
      std::pair<std::uint64_t, std::uint64_t>* dst = out->data() + at;
      for (std::size_t i = w; i < w + 8; ++i) {
        std::uint64_t word;
        std::memcpy(&word, data + i * 8, 8);
        if (word == 0) continue;
        n += static_cast<std::uint64_t>(__builtin_popcountll(word));
        *dst++ = {i, word};
      }
      out->resize(static_cast<std::size_t>(dst - out->data()));
    } else {
      __m256i bytes = _mm256_setzero_si256();
      count_block_avx2<kMode>(data, w, a, b, bytes);
      lanes = _mm256_add_epi64(lanes, _mm256_sad_epu8(bytes, _mm256_setzero_si256()));
    }
  }
  if constexpr (kMode != ScanMode::kCollect) {
    alignas(32) std::uint64_t sums[4];
    _mm256_store_si256(reinterpret_cast<__m256i*>(sums), lanes);
    n += sums[0] + sums[1] + sums[2] + sums[3];
  }
  return n + scan_words<kMode>(data, w, words, out);
}

bool cpu_has(BitmapScan path) noexcept {
  switch (path) {
    case BitmapScan::kPortable: return true;
    case BitmapScan::kPopcnt: return __builtin_cpu_supports("popcnt");
    case BitmapScan::kAvx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt");
  }
  return false;
}
#else
bool cpu_has(BitmapScan path) noexcept { return path == BitmapScan::kPortable; }
#endif

BitmapScan best_scan() noexcept {
  for (BitmapScan p : {BitmapScan::kAvx2, BitmapScan::kPopcnt})
    if (cpu_has(p)) return p;
  return BitmapScan::kPortable;
}

// The best path, or the one OBJPROF_BITMAP_SCAN names if this CPU can run it. A function-local
// static: correct even when another file's static initialiser scans a bitmap.
BitmapScan chosen_scan() noexcept {
  static const BitmapScan chosen = [] {
    const char* forced = std::getenv("OBJPROF_BITMAP_SCAN");
    if (forced == nullptr || *forced == '\0') return best_scan();
    const Result<BitmapScan> p = bitmap_scan_from_name(forced);
    if (!p.ok() || !cpu_has(*p)) {
      std::fprintf(stderr, "objprof: OBJPROF_BITMAP_SCAN=%s: %s; using %s\n", forced,
                   p.ok() ? "this CPU cannot run it" : p.error().message.c_str(),
                   std::string(bitmap_scan_name(best_scan())).c_str());
      return best_scan();
    }
    return *p;
  }();
  return chosen;
}

// Words [first, words).
template <ScanMode kMode>
std::uint64_t scan(BitmapScan path, std::uint8_t* data, std::size_t first, std::size_t words, WordList* out) {
#if defined(__x86_64__)
  if (path == BitmapScan::kAvx2) return scan_avx2<kMode>(data, first, words, out);
  if (path == BitmapScan::kPopcnt) return scan_popcnt<kMode>(data, first, words, out);
#else
  (void)path;
#endif
  return scan_words<kMode>(data, first, words, out);
}

// The runs of non-zero words found so far: the last one is open while its words go on.
struct RunCursor {
  std::vector<BitmapSnapshot::MarkedRun>* out;
  bool open = false;
  OBJPROF_ALWAYS_INLINE void start(std::uint64_t w) {
    out->push_back({w, 0});
    open = true;
  }
  OBJPROF_ALWAYS_INLINE void stop(std::uint64_t w) {
    out->back().words = w - out->back().first;
    open = false;
  }
};

// Words [begin, end), one at a time (the portable and POPCNT paths, and the AVX2 path's tail).
OBJPROF_ALWAYS_INLINE std::uint64_t runs_words(const std::uint8_t* data, std::size_t begin, std::size_t end,
                                               RunCursor& c) {
  std::uint64_t n = 0;
  for (std::size_t w = begin; w < end; ++w) {
    std::uint64_t word;
    std::memcpy(&word, data + w * 8, 8);
    if (word == 0) {
      if (c.open) c.stop(w);
      continue;
    }
    n += static_cast<std::uint64_t>(__builtin_popcountll(word));
    if (!c.open) c.start(w);
  }
  return n;
}

#if defined(__x86_64__)
__attribute__((target("popcnt"))) std::uint64_t runs_popcnt(const std::uint8_t* data, std::size_t first,
                                                            std::size_t words, RunCursor& c) {
  return runs_words(data, first, words, c);
}

// Words w to w + 7, loaded as a and b, of which at least one may be non-zero: their marks added
// per byte to `bytes`, and a run started or ended at each word where zero and non-zero words
// meet (bit i of `edges`: word i differs from word i - 1, the open run standing for word -1).
// A block inside a run costs no branch on its words.
__attribute__((target("avx2,popcnt"), always_inline)) inline void run_block_avx2(std::size_t w, __m256i a, __m256i b,
                                                                                  __m256i& bytes, RunCursor& c) {
  const __m256i zero = _mm256_setzero_si256();
  const unsigned zero_words =
      static_cast<unsigned>(_mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(a, zero)))) |
      static_cast<unsigned>(_mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(b, zero)))) << 4;
  const unsigned marked = ~zero_words & 0xffu;
  for (unsigned edges = (marked ^ ((marked << 1) | static_cast<unsigned>(c.open))) & 0xffu; edges != 0;
       edges &= edges - 1) {
    const std::size_t at = w + static_cast<std::size_t>(__builtin_ctz(edges));
    if (c.open) c.stop(at);
    else c.start(at);
  }
  bytes = _mm256_add_epi8(bytes, _mm256_add_epi8(popcount_bytes(a), popcount_bytes(b)));
}

// As scan_avx2: one test per 256 zero bytes, then per 64; a block with marks costs its edges.
__attribute__((target("avx2,popcnt"))) std::uint64_t runs_avx2(const std::uint8_t* data, std::size_t first,
                                                               std::size_t words, RunCursor& c) {
  __m256i lanes = _mm256_setzero_si256();
  std::size_t w = first;
  for (; w + 32 <= words; w += 32) {
    const __m256i v0 = load_words(data, w), v1 = load_words(data, w + 4);
    const __m256i v2 = load_words(data, w + 8), v3 = load_words(data, w + 12);
    const __m256i v4 = load_words(data, w + 16), v5 = load_words(data, w + 20);
    const __m256i v6 = load_words(data, w + 24), v7 = load_words(data, w + 28);
    const __m256i all = _mm256_or_si256(_mm256_or_si256(_mm256_or_si256(v0, v1), _mm256_or_si256(v2, v3)),
                                        _mm256_or_si256(_mm256_or_si256(v4, v5), _mm256_or_si256(v6, v7)));
    if (all_zero(all)) {
      if (c.open) c.stop(w);
      continue;
    }
    __m256i bytes = _mm256_setzero_si256();  // at most 4 x 16 marks per byte
    run_block_avx2(w, v0, v1, bytes, c);
    run_block_avx2(w + 8, v2, v3, bytes, c);
    run_block_avx2(w + 16, v4, v5, bytes, c);
    run_block_avx2(w + 24, v6, v7, bytes, c);
    lanes = _mm256_add_epi64(lanes, _mm256_sad_epu8(bytes, _mm256_setzero_si256()));
  }
  for (; w + 8 <= words; w += 8) {
    const __m256i a = load_words(data, w), b = load_words(data, w + 4);
    if (all_zero(_mm256_or_si256(a, b))) {
      if (c.open) c.stop(w);
      continue;
    }
    __m256i bytes = _mm256_setzero_si256();
    run_block_avx2(w, a, b, bytes, c);
    lanes = _mm256_add_epi64(lanes, _mm256_sad_epu8(bytes, _mm256_setzero_si256()));
  }
  alignas(32) std::uint64_t sums[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(sums), lanes);
  return sums[0] + sums[1] + sums[2] + sums[3] + runs_words(data, w, words, c);
}
#endif

// Words [first, words) as runs into `out` (cleared first).
std::uint64_t runs(BitmapScan path, const std::uint8_t* data, std::size_t first, std::size_t words,
                   std::vector<BitmapSnapshot::MarkedRun>& out) {
  out.clear();
  RunCursor c{&out};
  std::uint64_t n = 0;
#if defined(__x86_64__)
  if (path == BitmapScan::kAvx2) n = runs_avx2(data, first, words, c);
  else if (path == BitmapScan::kPopcnt) n = runs_popcnt(data, first, words, c);
  else n = runs_words(data, first, words, c);
#else
  (void)path;
  n = runs_words(data, first, words, c);
#endif
  if (c.open) c.stop(words);
  return n;
}

}  // namespace

bool bitmap_scan_supported(BitmapScan path) noexcept { return cpu_has(path); }
BitmapScan bitmap_scan_path() noexcept { return chosen_scan(); }

std::string_view bitmap_scan_name(BitmapScan path) noexcept {
  switch (path) {
    case BitmapScan::kPortable: return "portable";
    case BitmapScan::kPopcnt: return "popcnt";
    case BitmapScan::kAvx2: return "avx2";
  }
  return "?";
}

Result<BitmapScan> bitmap_scan_from_name(std::string_view name) {
  for (BitmapScan p : kAllBitmapScans)
    if (bitmap_scan_name(p) == name) return p;
  return make_error(ErrorCode::kInvalidArgument, "unknown bitmap scan '" + std::string(name) + "' (portable, popcnt, avx2)");
}

// kCount and kCollect only read: the const_casts below never write through.
std::uint64_t BitmapSnapshot::count() const noexcept {
  return scan<ScanMode::kCount>(chosen_scan(), const_cast<std::uint8_t*>(data_), first_ / 8, size_ / 8, nullptr);
}

std::uint64_t BitmapSnapshot::count_and_clear() noexcept { return count_and_clear_with(chosen_scan()); }

std::uint64_t BitmapSnapshot::count_and_clear_with(BitmapScan path) noexcept {
  if (!cpu_has(path)) path = chosen_scan();
  // The snapshot owns its buffer (mutators write to the other one now).
  const std::uint64_t n = scan<ScanMode::kClear>(path, buffer_.data, first_ / 8, size_ / 8, nullptr);
  clean_ = true;
  return n;
}

std::uint64_t BitmapSnapshot::clear_outside_window() noexcept {
  // The snapshot owns its buffer (mutators write to the other one now).
  return scan_words<ScanMode::kClear>(buffer_.data, 0, first_ / 8, nullptr) +
         scan_words<ScanMode::kClear>(buffer_.data, size_ / 8, owner_->size_bytes() / 8, nullptr);
}

void BitmapSnapshot::clear_words(const WordList& nonzero) noexcept {
  // The snapshot owns its buffer (mutators write to the other one now).
  std::uint8_t* data = buffer_.data;
  const std::uint64_t end = size_ / 8;
  // The list is in index order. Where at least one word in 16 between its first and last is
  // marked, one fill of that span (a vector store per 32 bytes) costs less than a store per
  // listed word (~6 instructions each: scimark's dumps list most words of the window). The
  // density bounds what the fill writes to 16 words per marked one; a sparser list is cleared
  // word by word, so what a clear writes stays proportional to what was marked.
  const std::uint64_t first = nonzero.empty() ? 0 : nonzero.front().first;
  const std::uint64_t last = nonzero.empty() ? 0 : std::min(nonzero.back().first + 1, end);
  if (first < last && nonzero.size() * 16 >= last - first) {
    std::memset(data + first * 8, 0, (last - first) * 8);
  } else {
    for (const auto& [index, word] : nonzero)
      if (index < end) std::memset(data + index * 8, 0, 8);
  }
  clean_ = true;
}

std::uint64_t BitmapSnapshot::nonzero_words(WordList& out) const { return nonzero_words_with(chosen_scan(), out); }

std::uint64_t BitmapSnapshot::nonzero_words_with(BitmapScan path, WordList& out) const {
  out.clear();
  if (!cpu_has(path)) path = chosen_scan();
  return scan<ScanMode::kCollect>(path, const_cast<std::uint8_t*>(data_), first_ / 8, size_ / 8, &out);
}

std::uint64_t BitmapSnapshot::marked_runs(std::vector<MarkedRun>& out) const { return marked_runs_with(chosen_scan(), out); }

std::uint64_t BitmapSnapshot::marked_runs_with(BitmapScan path, std::vector<MarkedRun>& out) const {
  if (!cpu_has(path)) path = chosen_scan();
  return runs(path, data_, first_ / 8, size_ / 8, out);
}

void BitmapSnapshot::clear_runs(const std::vector<MarkedRun>& runs) noexcept {
  // The snapshot owns its buffer (mutators write to the other one now).
  std::uint8_t* data = buffer_.data;
  const std::uint64_t end = size_ / 8;
  std::uint64_t marked = 0;
  for (const MarkedRun& r : runs) marked += r.words;
  // As clear_words: one fill from the first run to the last where at least one word in 16 of
  // that span is marked, so what a clear writes stays proportional to what was marked.
  const std::uint64_t first = runs.empty() ? 0 : runs.front().first;
  const std::uint64_t last = runs.empty() ? 0 : std::min(runs.back().first + runs.back().words, end);
  if (first < last && marked * 16 >= last - first) {
    std::memset(data + first * 8, 0, (last - first) * 8);
  } else {
    for (const MarkedRun& r : runs) {
      if (r.first >= end) continue;
      const std::uint64_t n = std::min(r.words, end - r.first);
      if (n == 1) std::memset(data + r.first * 8, 0, 8);  // a store, not a call: sparse marks are runs of one
      else std::memset(data + r.first * 8, 0, n * 8);
    }
  }
  clean_ = true;
}

}  // namespace objprof
