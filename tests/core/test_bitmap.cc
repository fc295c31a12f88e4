#include "test_support.h"

#include <objprof/access_bitmap.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <thread>
#include <vector>

namespace test_bitmap {

using namespace objprof;
using objprof::test::FakeHeap;

TEST_CASE("HeapSpace rejects bad bounds and alignments", "[core][space]") {
  CHECK_FALSE(HeapSpace::make(0, 4096).ok());                 // null is never in a space
  CHECK_FALSE(HeapSpace::make(8192, 4096).ok());              // end below begin
  CHECK_FALSE(HeapSpace::make(4096, 4096).ok());              // empty
  CHECK_FALSE(HeapSpace::make(4096, 8192, 12).ok());          // K not a power of two
  CHECK_FALSE(HeapSpace::make(4100, 8192, 8).ok());           // begin not K-aligned
  auto bad = HeapSpace::make(4096, 8192, 3);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("power of two") != std::string::npos);
  auto s = HeapSpace::make(4096, 8192, 16);
  REQUIRE(s.ok());
  CHECK(s->granule_count() == 256);
  CHECK(s->contains(4096));
  CHECK(s->contains(8191));
  CHECK_FALSE(s->contains(8192));
  CHECK_FALSE(s->contains(4095));
  CHECK_FALSE(s->contains(0));
}

TEST_CASE("Bitmap is heap/64 at K=8 and maps granule g to byte g/8 bit g%8", "[core][bitmap]") {
  FakeHeap heap(1 << 20);
  auto bm = AccessBitmap::create(heap.space());
  REQUIRE(bm.ok());
  CHECK((*bm)->size_bytes() == (1 << 20) / 64);
  // Granules at both ends, at byte boundaries (7|8) and at word boundaries (63|64).
  const std::vector<std::uint64_t> granules = {0, 1, 7, 8, 63, 64, 65, 511, 512, (1 << 17) - 1};
  for (auto g : granules) (*bm)->mark<MarkMode::kRacy>(heap.space().address_of(g));
  for (auto g : granules) CHECK((*bm)->test(heap.space().address_of(g)));
  CHECK_FALSE((*bm)->test(heap.space().address_of(2)));
  CHECK_FALSE((*bm)->test(heap.space().end()));        // one past the end
  CHECK_FALSE((*bm)->test(heap.space().begin() - 8));  // one before
  CHECK((*bm)->count() == granules.size());

  auto snap = (*bm)->snapshot_and_clear();
  REQUIRE(snap.ok());
  const auto bytes = snap->bytes();
  for (auto g : granules) CHECK(((bytes[g >> 3] >> (g & 7)) & 1) == 1);
  std::vector<Address> seen;
  snap->for_each_marked([&](Address a) { seen.push_back(a); });
  std::vector<Address> expected;
  for (auto g : granules) expected.push_back(heap.space().address_of(g));
  CHECK(seen == expected);
  // The live bitmap is all zero after the swap.
  CHECK((*bm)->count() == 0);
  for (auto g : granules) CHECK_FALSE((*bm)->test(heap.space().address_of(g)));
}

namespace {

// Pages of [p, p + bytes) resident in memory (p page-aligned).
std::size_t resident_pages(const void* p, std::size_t bytes) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> v((bytes + page - 1) / page);
  REQUIRE(::mincore(const_cast<void*>(p), bytes, v.data()) == 0);
  return static_cast<std::size_t>(std::count_if(v.begin(), v.end(), [](unsigned char r) { return (r & 1) != 0; }));
}

}  // namespace

TEST_CASE("Bitmap buffers of a space up to 128 MiB come with their pages, larger ones as touched", "[core][bitmap]") {
  // Small: both buffers (the active one, and after a swap the former spare) are resident before
  // any mark, so no mutator's first mark and no harvest takes a page fault. qemu-user maps the
  // guest's memory itself and does not pass MAP_POPULATE on (0 of 32 pages resident there), so
  // under emulation only the large case below is checked.
  FakeHeap small(8 << 20);
  auto bm = AccessBitmap::create(small.space());
  REQUIRE(bm.ok());
  const std::size_t bytes = (*bm)->size_bytes();
  const std::size_t pages = (bytes + static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)) - 1) /
                            static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  if (!objprof::test::emulated()) {
    CHECK(resident_pages((*bm)->descriptor().bitmap.load(), bytes) == pages);
    REQUIRE((*bm)->snapshot_and_clear().ok());
    CHECK(resident_pages((*bm)->descriptor().bitmap.load(), bytes) == pages);
  }

  // Large (a 1 GiB space: 16 MiB of bitmap): nothing is resident until touched.
  auto large = HeapSpace::make(Address{1} << 40, (Address{1} << 40) + (Address{1} << 30));
  REQUIRE(large.ok());
  auto big = AccessBitmap::create(*large);
  REQUIRE(big.ok());
  CHECK(resident_pages((*big)->descriptor().bitmap.load(), (*big)->size_bytes()) == 0);
  (*big)->mark<MarkMode::kRacy>(large->address_of(0));
  CHECK(resident_pages((*big)->descriptor().bitmap.load(), (*big)->size_bytes()) >= 1);
}

TEST_CASE("Bitmap with K=16 uses one bit per 16 bytes", "[core][bitmap]") {
  FakeHeap heap(64 * 1024, 16);
  auto bm = AccessBitmap::create(heap.space());
  REQUIRE(bm.ok());
  CHECK((*bm)->size_bytes() == 64 * 1024 / 128);
  (*bm)->mark<MarkMode::kAtomic>(heap.at(16 * 9));
  CHECK((*bm)->test(heap.at(16 * 9)));
  CHECK_FALSE((*bm)->test(heap.at(16 * 8)));
  CHECK_FALSE((*bm)->test(heap.at(16 * 10)));
}

TEST_CASE("Bitmap of a space that is not a multiple of 64 granules rounds up to whole words", "[core][bitmap]") {
  FakeHeap heap(4096 + 8 * 3);  // 515 granules
  auto bm = AccessBitmap::create(heap.space());
  REQUIRE(bm.ok());
  CHECK((*bm)->size_bytes() == 9 * 8);
  const Address last = heap.space().end() - 8;
  (*bm)->mark<MarkMode::kAtomicTestFirst>(last);
  auto snap = (*bm)->snapshot_and_clear();
  REQUIRE(snap.ok());
  std::vector<Address> seen;
  snap->for_each_marked([&](Address a) { seen.push_back(a); });
  REQUIRE(seen.size() == 1);
  CHECK(seen[0] == last);
}

TEST_CASE("snapshot_and_clear hands back each epoch's bits and reuses cleared buffers", "[core][bitmap]") {
  FakeHeap heap(1 << 16);
  auto bm = AccessBitmap::create(heap.space());
  REQUIRE(bm.ok());
  AccessBitmap& b = **bm;
  for (int epoch = 0; epoch < 6; ++epoch) {
    b.mark<MarkMode::kRacy>(heap.at(8 * static_cast<std::size_t>(epoch)));
    auto snap = b.snapshot_and_clear();
    REQUIRE(snap.ok());
    CHECK(snap->count() == 1);  // only this epoch's mark: the reused buffer was cleared
    CHECK(snap->test(heap.at(8 * static_cast<std::size_t>(epoch))));
  }
  // Holding two snapshots at once still works (a third buffer is mapped).
  b.mark<MarkMode::kRacy>(heap.at(0));
  auto s1 = b.snapshot_and_clear();
  b.mark<MarkMode::kRacy>(heap.at(8));
  auto s2 = b.snapshot_and_clear();
  b.mark<MarkMode::kRacy>(heap.at(16));
  auto s3 = b.snapshot_and_clear();
  REQUIRE((s1.ok() && s2.ok() && s3.ok()));
  CHECK((s1->test(heap.at(0)) && !s1->test(heap.at(8))));
  CHECK((s2->test(heap.at(8)) && !s2->test(heap.at(0))));
  CHECK((s3->test(heap.at(16)) && s3->count() == 1));
  CHECK(b.count() == 0);
}

TEST_CASE("Large bitmaps are cleared on release too", "[core][bitmap]") {
  // 512 MiB of address space (not touched): an 8 MiB bitmap, over the madvise threshold.
  const Address base = Address{1} << 40;
  auto space = HeapSpace::make(base, base + (Address{512} << 20));
  REQUIRE(space.ok());
  auto bm = AccessBitmap::create(*space);
  REQUIRE(bm.ok());
  for (int round = 0; round < 3; ++round) {
    for (Address a = base; a < space->end(); a += (Address{1} << 20)) (*bm)->mark<MarkMode::kRacy>(a + 8 * static_cast<Address>(round));
    auto snap = (*bm)->snapshot_and_clear();
    REQUIRE(snap.ok());
    CHECK(snap->count() == 512);
  }
}

namespace {

// Two threads set different bits (0 and 1) of the same bytes, in the same order, so they
// collide. Returns the number of marks lost (of 2 * bytes * rounds); fails the test if any byte
// ends with neither bit or with a bit nobody set.
template <MarkMode kMode>
std::size_t lost_marks_under_contention(std::size_t bytes, int rounds) {
  std::size_t lost = 0;
  FakeHeap heap(bytes * 64);
  auto bm = AccessBitmap::create(heap.space());
  REQUIRE(bm.ok());
  AccessBitmap& b = **bm;
  for (int r = 0; r < rounds; ++r) {
    auto worker = [&](int bit) {
      for (std::size_t i = 0; i < bytes; ++i) b.mark<kMode>(heap.space().address_of(i * 8 + static_cast<std::size_t>(bit)));
    };
    std::thread t0(worker, 0), t1(worker, 1);
    t0.join();
    t1.join();
    auto snap = b.snapshot_and_clear();
    REQUIRE(snap.ok());
    std::size_t empty = 0, foreign = 0;
    for (std::size_t i = 0; i < bytes; ++i) {
      const auto v = static_cast<unsigned>(snap->bytes()[i]);
      lost += 2 - static_cast<std::size_t>(std::popcount(v & 3u));
      empty += v == 0;
      foreign += (v & ~3u) != 0;
    }
    // A racy read-modify-write can only overwrite the other thread's bit with a stale copy of
    // the byte: the last store always carries its own bit, so no byte loses both marks.
    CHECK(empty == 0);
    CHECK(foreign == 0);
  }
  return lost;
}

}  // namespace

TEST_CASE("Atomic marking loses nothing when two threads hammer one byte", "[core][bitmap][threads]") {
  const std::size_t bytes = objprof::test::scaled(1 << 14, 64);
  CHECK(lost_marks_under_contention<MarkMode::kAtomic>(bytes, 4) == 0);
  CHECK(lost_marks_under_contention<MarkMode::kAtomicTestFirst>(bytes, 4) == 0);
}

TEST_CASE("Racy marking loses at most one of two colliding marks per byte, and nothing without contention",
          "[core][bitmap][threads]") {
  const std::size_t bytes = objprof::test::scaled(1 << 14, 64);
  constexpr int kRounds = 4;
  // Not asserted zero: this is the documented cost of the seeds' unlocked sequence. What it
  // can lose is bounded per byte inside lost_marks_under_contention (never both bits).
  const std::size_t lost = lost_marks_under_contention<MarkMode::kRacy>(bytes, kRounds);
  WARN("racy marking lost " << lost << " of " << 2 * bytes * kRounds << " marks under two-thread contention");
  // One thread alone loses nothing: the loss above comes from the race, not from the sequence.
  FakeHeap heap(bytes * 64);
  auto bm = AccessBitmap::create(heap.space());
  REQUIRE(bm.ok());
  for (std::size_t i = 0; i < bytes; ++i)
    for (std::size_t bit = 0; bit < 8; ++bit) (*bm)->mark<MarkMode::kRacy>(heap.space().address_of(i * 8 + bit));
  auto snap = (*bm)->snapshot_and_clear();
  REQUIRE(snap.ok());
  CHECK(snap->count() == bytes * 8);
}

TEST_CASE("Test-first marks store nothing when the bit is set: a read-only page of set bits takes them",
          "[core][bitmap]") {
  // Two pages of bitmap bytes: the first all set and then made read-only, the second clear. A
  // test-first mark of any granule of the first page only reads it (a store would fault); the
  // plain racy mark, whose store is unconditional, is the reason the mode exists.
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  void* mem = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(mem != MAP_FAILED);
  auto* bytes = static_cast<std::uint8_t*>(mem);
  std::fill(bytes, bytes + page, std::uint8_t{0xFF});
  REQUIRE(mprotect(bytes, page, PROT_READ) == 0);
  const std::uint64_t granules = page * 8;
  for (std::uint64_t g = 0; g < granules; g += 7) {
    AccessBitmap::mark_granule<MarkMode::kRacyTestFirst>(bytes, g);
    AccessBitmap::mark_granule<MarkMode::kAtomicTestFirst>(bytes, g);
  }
  // The writable page gets exactly the bits marked there, as kRacy would set them.
  std::vector<std::uint8_t> want(page, 0);
  for (std::uint64_t g = granules; g < 2 * granules; g += 5) {
    AccessBitmap::mark_granule<MarkMode::kRacyTestFirst>(bytes, g);
    AccessBitmap::mark_granule<MarkMode::kRacyTestFirst>(bytes, g);  // the second finds it set
    want[(g - granules) >> 3] |= static_cast<std::uint8_t>(1u << (g & 7));
  }
  CHECK(std::equal(want.begin(), want.end(), bytes + page));
  CHECK(std::all_of(bytes, bytes + page, [](std::uint8_t b) { return b == 0xFF; }));
  munmap(mem, 2 * page);
}

TEST_CASE("Bitmap of a space used from its start: harvests cover only the used part", "[core][bitmap]") {
  FakeHeap heap(1 << 20);  // 1 MiB space, 16 KiB of bitmap
  auto bm = std::move(*AccessBitmap::create(heap.space()));
  CHECK(bm->used_bytes() == (1u << 20) / 64);  // all of it by default
  auto fresh = std::move(*AccessBitmap::create(heap.space()));
  fresh->set_used(4096);  // 4 KiB in use: 64 bytes of bitmap
  CHECK(fresh->used_bytes() == 64);
  fresh->mark<MarkMode::kRacy>(heap.at(100));
  fresh->set_used(1000);  // never shrinks
  CHECK(fresh->used_bytes() == 64);
  {
    auto snap = std::move(*fresh->snapshot_and_clear());
    CHECK(snap.bytes().size() == 64);
    CHECK(snap.test(heap.at(100)));
    CHECK(snap.count() == 1);
    CHECK_FALSE(snap.test_granule(1 << 16));  // beyond the used part: never marked
  }
  fresh->set_used(100000);  // rounded up to whole words of bitmap
  CHECK(fresh->used_bytes() == ((100000 + 63) / 64 + 7) / 8 * 8);
  fresh->mark<MarkMode::kRacy>(heap.at(90000));
  fresh->mark<MarkMode::kRacy>(heap.at(100));
  auto snap = std::move(*fresh->snapshot_and_clear());
  CHECK(snap.count() == 2);
  CHECK(snap.test(heap.at(90000)));
  fresh->set_used(std::uint64_t{1} << 40);  // capped at the space
  CHECK(fresh->used_bytes() == (1u << 20) / 64);
}

TEST_CASE("Bitmap window from used_from to used: harvests scan and clear only it, word indices stay absolute",
          "[core][bitmap]") {
  FakeHeap heap(1 << 20);  // 1 MiB space, 16 KiB of bitmap
  auto bm = std::move(*AccessBitmap::create(heap.space()));
  CHECK(bm->used_from_byte() == 0);  // from the start by default
  bm->set_used_from(1 << 20);        // the first call sets it: no object yet
  CHECK(bm->used_from_byte() == (1u << 20) / 64);
  bm->set_used_from(600000);  // an object at 600000 (granule 75000, bitmap byte 9375): down to a word
  CHECK(bm->used_from_byte() == 9375 / 8 * 8);
  bm->set_used_from(900000);  // never rises
  CHECK(bm->used_from_byte() == 9375 / 8 * 8);
  const std::vector<std::size_t> marked = {600000, 600008, 700000, (1 << 20) - 8};
  std::vector<std::pair<std::uint64_t, std::uint64_t>> want;
  for (std::size_t a : marked) {
    bm->mark<MarkMode::kRacy>(heap.at(a));
    const std::uint64_t g = a / 8;
    if (!want.empty() && want.back().first == g / 64) want.back().second |= std::uint64_t{1} << (g % 64);
    else want.emplace_back(g / 64, std::uint64_t{1} << (g % 64));
  }
  for (int round = 0; round < 3; ++round) {  // buffers come back clean and are reused
    INFO("round " << round);
    if (round > 0)
      for (std::size_t a : marked) bm->mark<MarkMode::kRacy>(heap.at(a));
    auto snap = std::move(*bm->snapshot_and_clear());
    CHECK(snap.first_byte() == 9375 / 8 * 8);
    CHECK(snap.count() == marked.size());
    for (BitmapScan p : kAllBitmapScans) {
      if (!bitmap_scan_supported(p)) continue;
      INFO("path " << bitmap_scan_name(p));
      std::vector<std::pair<std::uint64_t, std::uint64_t>> got;
      CHECK(snap.nonzero_words_with(p, got) == marked.size());
      CHECK(got == want);  // indices from the space's start, not the window's
    }
    std::vector<std::size_t> seen;
    snap.for_each_marked([&](Address a) { seen.push_back(static_cast<std::size_t>(a - heap.at(0))); });
    CHECK(seen == marked);
    if (round == 1) CHECK(snap.count_and_clear() == marked.size());
  }
  for (int round = 0; round < 2; ++round) {  // both buffers: nothing left over
    auto empty = std::move(*bm->snapshot_and_clear());
    CHECK(empty.count() == 0);
    std::vector<std::pair<std::uint64_t, std::uint64_t>> none;
    CHECK(empty.nonzero_words(none) == 0);
  }
  // With the high end below the low one the window is empty.
  auto fresh = std::move(*AccessBitmap::create(heap.space()));
  fresh->set_used(0);
  fresh->set_used_from(1 << 20);
  auto snap = std::move(*fresh->snapshot_and_clear());
  CHECK(snap.first_byte() == 0);
  CHECK(snap.count() == 0);
}

TEST_CASE("Bitmap snapshot cleared word by word returns its buffer all zero", "[core][bitmap]") {
  FakeHeap heap(1 << 16);
  auto bm = std::move(*AccessBitmap::create(heap.space()));
  std::vector<std::pair<std::uint64_t, std::uint64_t>> words;
  for (int round = 0; round < 4; ++round) {  // two buffers alternate: each is reused twice
    bm->mark<MarkMode::kRacy>(heap.at(8 * static_cast<std::size_t>(round)));
    bm->mark<MarkMode::kRacy>(heap.at(40000 + 64 * static_cast<std::size_t>(round)));
    auto snap = std::move(*bm->snapshot_and_clear());
    CHECK(snap.nonzero_words(words) == 2);
    snap.clear_words(words);
    CHECK(snap.count() == 0);
  }
  auto empty = std::move(*bm->snapshot_and_clear());
  CHECK(empty.count() == 0);  // nothing left over from any earlier round
  bm->mark<MarkMode::kRacy>(heap.at(16));
  auto one = std::move(*bm->snapshot_and_clear());
  CHECK(one.count() == 1);
}

// A dump that lists at least one word in 16 of its span is cleared by one fill of the span
// instead of word by word: the buffer must come back as clean either way, with marks at the
// span's ends, and the fill must not touch the other buffer (the one mutators mark meanwhile).
TEST_CASE("Bitmap snapshot with dense marks cleared by one fill returns its buffer all zero", "[core][bitmap]") {
  FakeHeap heap(1 << 16);  // 8192 granules: 128 words of bits
  auto bm = std::move(*AccessBitmap::create(heap.space()));
  std::vector<std::pair<std::uint64_t, std::uint64_t>> words;
  for (int round = 0; round < 4; ++round) {  // two buffers alternate: each is reused twice
    // Words 10, 12, ..., 72 and 73 marked (33 of the 64-word span 10..73): the fill. Granules
    // 64 * 10 + 3 + round and 64 * 73 + 63 are the span's first and last marks.
    std::vector<std::size_t> granules;
    for (std::size_t w = 10; w <= 72; w += 2) granules.push_back(64 * w + 3 + static_cast<std::size_t>(round));
    granules.push_back(64 * 73 + 63);
    for (std::size_t g : granules) bm->mark<MarkMode::kRacy>(heap.at(8 * g));
    const std::size_t marked = granules.size();
    auto snap = std::move(*bm->snapshot_and_clear());
    REQUIRE(snap.nonzero_words(words) == marked);
    REQUIRE(words.front().first == 10);
    REQUIRE(words.back().first == 73);
    REQUIRE(words.size() * 16 >= 64);  // dense enough for the fill
    snap.clear_words(words);
    CHECK(snap.count() == 0);
    CHECK(snap.nonzero_words(words) == 0);
  }
  // Both buffers came back clean: a new mark is all a snapshot holds.
  for (int round = 0; round < 2; ++round) {
    bm->mark<MarkMode::kRacy>(heap.at(8 * (64 * 100 + static_cast<std::size_t>(round))));
    auto one = std::move(*bm->snapshot_and_clear());
    CHECK(one.nonzero_words(words) == 1);
    CHECK(words.front().first == 100);
  }
  // A mark made in the active buffer, inside the span, while the snapshot's buffer is cleared,
  // is the next snapshot's only mark.
  for (std::size_t w = 10; w <= 73; w += 3) bm->mark<MarkMode::kRacy>(heap.at(8 * 64 * w));
  auto dense = std::move(*bm->snapshot_and_clear());
  REQUIRE(dense.nonzero_words(words) == 22);
  bm->mark<MarkMode::kRacy>(heap.at(8 * (64 * 41 + 7)));
  dense.clear_words(words);
  CHECK(dense.count() == 0);
  auto next = std::move(*bm->snapshot_and_clear());
  CHECK(next.nonzero_words(words) == 1);
  CHECK(words.front() == std::pair<std::uint64_t, std::uint64_t>{41, std::uint64_t{1} << 7});
}

// Every scan path the CPU runs finds the same words as a plain walk of the bits: random marks of
// several densities (a mark alone in its 64-byte block, blocks full of marks, the tail words
// beyond the last whole block), in spaces whose bitmap is not a multiple of 64 bytes.
TEST_CASE("Bitmap scans: every path finds the same non-zero words", "[core][bitmap][scan]") {
  CHECK(bitmap_scan_supported(BitmapScan::kPortable));
  CHECK(bitmap_scan_supported(bitmap_scan_path()));
  for (BitmapScan p : kAllBitmapScans) {
    auto named = bitmap_scan_from_name(bitmap_scan_name(p));
    REQUIRE(named.ok());
    CHECK(*named == p);
  }
  CHECK_FALSE(bitmap_scan_from_name("sse9").ok());
  std::uint64_t seed = 7;
  auto next = [&] {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return seed >> 33;
  };
  for (std::size_t bytes : {std::size_t{4096}, std::size_t{40960 + 8 * 512}, std::size_t{1} << 20}) {
    for (unsigned density : {1u, 50u, 2000u, 60000u, 100000u}) {  // marks per 100k granules (100k: every one)
      FakeHeap heap(bytes);
      auto bm = std::move(*AccessBitmap::create(heap.space()));
      std::vector<std::pair<std::uint64_t, std::uint64_t>> want;
      const std::uint64_t granules = bytes / 8;
      std::vector<std::uint64_t> words((granules + 63) / 64, 0);
      for (std::uint64_t g = 0; g < granules; ++g)
        if (next() % 100000 < density || g + 1 == granules) {
          bm->mark<MarkMode::kRacy>(heap.at(g * 8));
          words[g / 64] |= std::uint64_t{1} << (g % 64);
        }
      std::uint64_t marked = 0;
      for (std::size_t w = 0; w < words.size(); ++w)
        if (words[w]) {
          want.emplace_back(w, words[w]);
          marked += static_cast<std::uint64_t>(std::popcount(words[w]));
        }
      auto snap = std::move(*bm->snapshot_and_clear());
      for (BitmapScan p : kAllBitmapScans) {
        if (!bitmap_scan_supported(p)) continue;
        INFO("bytes " << bytes << " density " << density << " path " << bitmap_scan_name(p));
        std::vector<std::pair<std::uint64_t, std::uint64_t>> got;
        CHECK(snap.nonzero_words_with(p, got) == marked);
        CHECK(got == want);
      }
      CHECK(snap.count() == marked);
      // The same words as maximal runs of non-zero words (what the trace's dump writes).
      std::vector<BitmapSnapshot::MarkedRun> want_runs;
      for (std::size_t w = 0; w < words.size(); ++w) {
        if (words[w] == 0) continue;
        if (!want_runs.empty() && want_runs.back().first + want_runs.back().words == w) ++want_runs.back().words;
        else want_runs.push_back({w, 1});
      }
      for (BitmapScan p : kAllBitmapScans) {
        if (!bitmap_scan_supported(p)) continue;
        INFO("bytes " << bytes << " density " << density << " path " << bitmap_scan_name(p) << " runs");
        std::vector<BitmapSnapshot::MarkedRun> got = {{5, 5}};  // cleared first
        CHECK(snap.marked_runs_with(p, got) == marked);
        CHECK(got == want_runs);
      }
      // The harvest without a word list: the same count, and the words zeroed by that pass
      // itself (the snapshot reads empty, and a buffer marked clean is not cleared again).
      for (BitmapScan p : kAllBitmapScans) {
        if (!bitmap_scan_supported(p)) continue;
        INFO("bytes " << bytes << " density " << density << " path " << bitmap_scan_name(p) << " count_and_clear");
        for (std::size_t w = 0; w < words.size(); ++w)
          for (std::uint64_t bits = words[w]; bits != 0; bits &= bits - 1)
            bm->mark<MarkMode::kRacy>(heap.at((w * 64 + static_cast<std::uint64_t>(std::countr_zero(bits))) * 8));
        auto again = std::move(*bm->snapshot_and_clear());
        CHECK(again.count_and_clear_with(p) == marked);
        CHECK(again.count() == 0);
      }
      // Two more epochs without marks: the second snapshot is a buffer that came back from a
      // count_and_clear, so it must read empty too.
      CHECK(bm->snapshot_and_clear()->count() == 0);
      CHECK(bm->snapshot_and_clear()->count() == 0);
    }
  }
}

// A dump's runs clear the snapshot's buffer by one fill of their span when they are dense in
// it, else run by run: either way the buffer comes back all zero and the other buffer (the one
// mutators mark meanwhile) keeps its marks.
TEST_CASE("Bitmap snapshot cleared by its runs returns its buffer all zero", "[core][bitmap]") {
  FakeHeap heap(1 << 16);  // 8192 granules: 128 words of bits
  auto bm = std::move(*AccessBitmap::create(heap.space()));
  std::vector<BitmapSnapshot::MarkedRun> runs;
  const auto mark_words = [&](std::initializer_list<std::size_t> ws, std::size_t bit) {
    for (std::size_t w : ws) bm->mark<MarkMode::kRacy>(heap.at(8 * (64 * w + bit)));
  };
  for (int round = 0; round < 4; ++round) {  // two buffers alternate: each is reused twice
    const auto bit = static_cast<std::size_t>(round);
    if (round % 2 == 0) mark_words({10, 11, 12, 20, 21, 40, 41, 42, 43, 44, 45, 46, 47, 48}, bit);  // dense: one fill
    else mark_words({0, 60, 61, 127}, 63 - bit);  // sparse: run by run, the space's first and last words
    auto snap = std::move(*bm->snapshot_and_clear());
    REQUIRE(snap.marked_runs(runs) == (round % 2 == 0 ? 14u : 4u));
    if (round % 2 == 0) {
      CHECK(runs == std::vector<BitmapSnapshot::MarkedRun>{{10, 3}, {20, 2}, {40, 9}});
    } else {
      CHECK(runs == std::vector<BitmapSnapshot::MarkedRun>{{0, 1}, {60, 2}, {127, 1}});
    }
    if (round == 2) mark_words({30}, 9);  // in the active buffer, inside the span the fill clears
    snap.clear_runs(runs);
    CHECK(snap.count() == 0);
    CHECK(snap.marked_runs(runs) == 0);
    CHECK(runs.empty());
    if (round == 2) {
      auto next = std::move(*bm->snapshot_and_clear());
      CHECK(next.marked_runs(runs) == 1);
      CHECK(runs == std::vector<BitmapSnapshot::MarkedRun>{{30, 1}});
      next.clear_runs(runs);
    }
  }
  // Both buffers came back clean: a new mark is all a snapshot holds.
  for (int round = 0; round < 2; ++round) {
    mark_words({100}, static_cast<std::size_t>(round));
    auto one = std::move(*bm->snapshot_and_clear());
    CHECK(one.marked_runs(runs) == 1);
    CHECK(runs == std::vector<BitmapSnapshot::MarkedRun>{{100, 1}});
  }
}

}  // namespace test_bitmap
