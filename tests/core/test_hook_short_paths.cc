// The collector hooks' inline short paths (no hook checks, no trace, one space): on_move,
// on_free and on_free_range decide with the stale tracker's start bits whether an event can
// concern a tracked object. A range's granule starts are looked at inline when they lie in one
// 64-bit word of the bits, out of line otherwise. At every edge of that decision (a tracked
// start at the first or last bit of a word, a range that ends in the next word, the end of the
// space, unaligned addresses, a range that continues the one logged before it) the short paths
// must find the same deaths and moves as the checked paths, and count every event.
#include <objprof/profiler.h>
#include <objprof/trace_reader.h>

#include "test_support.h"

#include <catch2/catch.hpp>

#include <objprof/barrier.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace test_hook_short_paths {

using namespace objprof;

namespace {

// Objects of 256 bytes fill a 64 KiB space: even ones tracked (starts at bit 0 of each word of
// the start bits), odd ones not (bit 32). Object i is at 256 * i.
constexpr std::uint64_t kObject = 256;
constexpr std::uint64_t kSpace = 64 * 1024;
constexpr std::uint64_t kObjects = kSpace / kObject;

struct Outcome {
  std::vector<std::uint64_t> reported;  // object indices, by address
  ProfilerStats stats;
  std::vector<std::string> records;  // the trace's collector records, as text, in order
};

// The collector's records of a trace (moves and frees, GC brackets), offsets in slots of 8 bytes.
struct CollectorRecords final : trace::Visitor {
  Address base = 0;
  std::vector<std::string> out;
  void move(const trace::MoveEvent& m) override {
    out.push_back("move " + std::to_string((m.from - base) / 8) + " " + std::to_string((m.to - base) / 8) + " " +
                  std::to_string(m.bytes) + (m.range ? " range" : ""));
  }
  void free(const trace::FreeEvent& f) override {
    out.push_back("free " + std::to_string((f.addr - base) / 8) + " " + std::to_string(f.bytes) + (f.range ? " range" : ""));
  }
  void gc_begin(const trace::GcEvent& g) override { out.push_back("gc-begin " + std::to_string(g.epoch)); }
  void gc_end(const trace::GcEvent& g) override { out.push_back("gc-end " + std::to_string(g.epoch)); }
};

// A profiler over `heap` as both tests use it: an object leaks after two idle epochs whatever
// its size, objects from `min_size` bytes are tracked, reports go to `got`; type 1 and site 1,
// one mutator thread. checks: the hook checks (off: the short paths); traced: the trace goes to
// memory (`sink`).
struct Setup {
  std::unique_ptr<Profiler> prof;
  ThreadState* thread = nullptr;
  MemorySink* sink = nullptr;
};
Setup make_profiler(test::FakeHeap& heap, std::uint64_t min_size, bool checks, bool traced, std::vector<LeakReport>& got,
                    std::size_t chunk_payload = trace::kDefaultChunkPayload) {
  Setup s;
  ProfilerOptions o;
  o.check_hooks = checks;
  o.chunk_payload = chunk_payload;
  if (traced) {
    auto owned = std::make_unique<MemorySink>();
    s.sink = owned.get();
    o.trace_sink = std::move(owned);
  }
  o.stale_after_epochs = 2;
  o.stale_after_bytes = 0;
  o.min_tracked_size = min_size;
  o.default_leak_printer = false;
  o.on_leak = [&got](const LeakReport& r) { got.push_back(r); };
  s.prof = std::move(*Profiler::create(std::move(o)));
  REQUIRE(s.prof->add_space(heap.space()).ok());
  REQUIRE(s.prof->define_type({1, "Obj", 0, false}).ok());
  REQUIRE(s.prof->define_site({1, 0, "hooks", 0}).ok());
  s.thread = *s.prof->attach_thread(1, "mutator");
  return s;
}

// Ends one more epoch, with no accesses in it, and returns the addresses reported as leaks in
// all, sorted.
std::vector<Address> leaks_after_an_idle_epoch(Profiler& prof, const std::vector<LeakReport>& got) {
  REQUIRE(prof.gc_begin(GcKind::kFull).ok());
  REQUIRE(prof.gc_end().ok());
  std::vector<Address> reported;
  for (const LeakReport& r : got) reported.push_back(r.addr);
  std::sort(reported.begin(), reported.end());
  return reported;
}

Outcome run(bool checks, bool traced = false) {
  test::FakeHeap heap(kSpace);
  std::vector<LeakReport> got;
  Setup setup = make_profiler(heap, kObject, checks, traced, got);
  Profiler* const prof = setup.prof.get();
  MemorySink* const sink = setup.sink;
  ThreadState& thread = *setup.thread;
  auto at = [&](std::uint64_t i) { return heap.at(i * kObject); };
  // Slots 3 and 9 stay free memory; 56 to 63 are where objects move to.
  for (std::uint64_t i = 0; i < kObjects; ++i)
    if (i != 3 && i != 9 && (i < 56 || i > 63)) prof->on_alloc(thread, 1, 1, at(i), i % 2 == 0 ? kObject : kObject - 8);
  REQUIRE(prof->gc_begin(GcKind::kFull).ok());
  REQUIRE(prof->gc_end().ok());  // epoch 0 ends: the even objects are tracked

  REQUIRE(prof->gc_begin(GcKind::kCompacting).ok());
  // One word of start bits covers two slots (512 bytes): an even object's start is bit 0.
  prof->on_free_range(at(1), kObject);                   // an untracked object alone: one word, no start
  prof->on_free_range(at(2), kObject);                   // a tracked one alone: one word, bit 0
  prof->on_free_range(at(3) + 4, at(5) - at(3) - 4);     // unaligned, from free memory: object 4 (two words)
  prof->on_free_range(at(7), 2 * kObject);               // 7 and 8 (the next word's bit 0)
  prof->on_free_range(at(12), 2 * kObject - 8);          // 12 and 13 (248 bytes): one word, ending before it does
  prof->on_free_range(at(16), 8 * kObject);              // 16 to 23: four words
  prof->on_free_range(at(24), kObject);                  // 24 alone: logged...
  prof->on_free_range(at(25), 3 * kObject);              // ...and continued (25 to 27): 26 dies with it
  prof->on_free(at(30));                                 // tracked
  prof->on_free(at(31));                                 // untracked
  prof->on_free_range(at(kObjects - 4), 2 * kObject);    // 252 and 253
  prof->on_free_range(at(kObjects - 2), kObject);        // 254 alone
  prof->on_free_range(at(kObjects - 1), kObject);        // 255, to the end of the space
  prof->on_move(at(40), at(60));                         // tracked
  prof->on_move(at(41), at(61));                         // untracked
  prof->on_free_range(at(40), 2 * kObject);              // spares what the GC moves
  prof->on_move_range(at(44), at(56), 4 * kObject);      // 44 to 47 (two words; 44 and 46 tracked)
  prof->on_move_range(at(49), at(62), kObject - 8);      // an untracked object alone
  prof->on_free_range(at(44), 4 * kObject);              // spares what the range moved
  prof->on_free_range(at(50), 0);                        // empty: a no-op
  REQUIRE(prof->gc_end().ok());
  for (int gc = 0; gc < 3; ++gc) {
    REQUIRE(prof->gc_begin(GcKind::kFull).ok());
    REQUIRE(prof->gc_end().ok());
  }
  Outcome out;
  for (const LeakReport& r : got) out.reported.push_back((r.addr - heap.at(0)) / kObject);
  std::sort(out.reported.begin(), out.reported.end());
  out.stats = prof->stats();
  CHECK(prof->protocol_status().ok());
  if (sink) {
    REQUIRE(prof->finish().ok());
    CollectorRecords records;
    records.base = heap.at(0);
    REQUIRE(trace::read(std::span<const std::byte>(sink->data()), records).ok());
    out.records = std::move(records.out);
  }
  return out;
}

}  // namespace

TEST_CASE("collector hooks: the inline short paths find the same deaths and moves as the checked ones",
          "[core][profiler]") {
  const bool traced = GENERATE(false, true);
  INFO("trace " << traced);
  const Outcome checked = run(true, traced);
  const Outcome shorter = run(false, traced);
  // With a trace, the short paths write the same records as the checked ones.
  CHECK(checked.records == shorter.records);
  // 5 brackets, 2 moves, 2 move ranges, 2 frees, 13 free ranges.
  CHECK(checked.records.size() == (traced ? 2 * 5 + 2 + 2 + 2 + 13 : 0u));
  // Every tracked (even) object leaks but those that died; object 40 at its new place, 60, and
  // 44 and 46 at theirs, 56 and 58 (62 holds the untracked object 49).
  std::vector<std::uint64_t> want;
  for (std::uint64_t i = 0; i < kObjects; i += 2) {
    const bool died = i == 2 || i == 4 || i == 8 || i == 12 || (i >= 16 && i < 28) || i == 30 ||
                      i == kObjects - 4 || i == kObjects - 2;
    const bool moved_away = i == 40 || i == 44 || i == 46;
    if (!died && !moved_away && i != 62) want.push_back(i);
  }
  CHECK(checked.reported == want);
  CHECK(shorter.reported == want);
  for (const Outcome* o : {&checked, &shorter}) {
    CHECK(o->stats.moves == 4u);
    CHECK(o->stats.frees == 2u);
    CHECK(o->stats.free_ranges == 13u);  // the empty one is no event
    CHECK(o->stats.tracked_live == want.size());
  }
}

// A sweep with a trace reports its runs of dead cells as free ranges, each a 17-byte record
// that the short path writes straight into the collector thread's buffer when it fits. With
// chunks of 256 and 300 bytes a range often does not fit (the buffer is flushed first), and
// with two collector threads each has its own buffer and log. Whatever the chunk size, the
// short paths must write the same records, find the same deaths and count the same events as
// the checked paths, and every range must be in the trace once.
TEST_CASE("collector hooks with a trace: a sweep's free ranges at every chunk edge are written and logged whole",
          "[core][profiler][threads]") {
  const std::size_t chunk = GENERATE(std::size_t{256}, std::size_t{300}, std::size_t{4096});
  const unsigned sweepers = GENERATE(1u, 2u);
  INFO("chunk " << chunk << ", collector threads " << sweepers);
  struct Swept {
    std::vector<std::string> records;
    std::vector<std::uint64_t> leaked;  // object indices
    ProfilerStats stats;
    std::uint64_t ranges_reported = 0;
  };
  auto sweep = [&](bool checks) {
    test::FakeHeap heap(kSpace);
    std::vector<LeakReport> got;
    Setup setup = make_profiler(heap, kObject, checks, /*traced=*/true, got, chunk);
    Profiler* const prof = setup.prof.get();
    auto at = [&](std::uint64_t i) { return heap.at(i * kObject); };
    for (std::uint64_t i = 0; i < kObjects; ++i) prof->on_alloc(*setup.thread, 1, 1, at(i), i % 2 == 0 ? kObject : kObject - 8);
    REQUIRE(prof->gc_begin(GcKind::kFull).ok());
    REQUIRE(prof->gc_end().ok());  // epoch 0 ends: the even objects are tracked
    std::mt19937_64 rng(chunk * 31 + sweepers);  // the same program for both paths
    std::vector<bool> live(kObjects, true);
    Swept out;
    for (int gc = 0; gc < 6; ++gc) {
      // Runs of 1-5 live objects die, each reported as one range; a sweeper takes every
      // other run. A run's end may reach into free memory (the next dead slot).
      std::vector<std::pair<Address, std::uint64_t>> runs;
      for (std::uint64_t i = 0; i < kObjects; ++i) {
        if (!live[i] || rng() % 4 != 0) continue;
        std::uint64_t n = 1;
        while (n < 5 && i + n < kObjects && live[i + n] && rng() % 2 == 0) ++n;
        for (std::uint64_t k = 0; k < n; ++k) live[i + k] = false;
        const std::uint64_t tail = i + n < kObjects && !live[i + n] ? rng() % kObject : 0;
        runs.emplace_back(at(i), n * kObject + tail / 8 * 8);
        i += n;
      }
      out.ranges_reported += runs.size();
      REQUIRE(prof->gc_begin(GcKind::kFull).ok());
      std::vector<std::thread> threads;
      for (unsigned t = 0; t < sweepers; ++t)
        threads.emplace_back([&, t] {
          for (std::size_t k = t; k < runs.size(); k += sweepers) prof->on_free_range(runs[k].first, runs[k].second);
        });
      for (std::thread& th : threads) th.join();
      REQUIRE(prof->gc_end().ok());
    }
    for (const LeakReport& r : got) out.leaked.push_back((r.addr - heap.at(0)) / kObject);
    std::sort(out.leaked.begin(), out.leaked.end());
    out.stats = prof->stats();
    CHECK(prof->protocol_status().ok());
    REQUIRE(prof->finish().ok());
    CollectorRecords records;
    records.base = heap.at(0);
    REQUIRE(trace::read(std::span<const std::byte>(setup.sink->data()), records).ok());
    out.records = std::move(records.out);
    // Nothing is ever accessed: every tracked object still alive has leaked (those that died
    // later may have been reported before they did), and only those are tracked.
    std::vector<std::uint64_t> alive;
    for (std::uint64_t i = 0; i < kObjects; i += 2)
      if (live[i]) alive.push_back(i);
    CHECK(std::includes(out.leaked.begin(), out.leaked.end(), alive.begin(), alive.end()));
    CHECK(out.stats.tracked_live == alive.size());
    return out;
  };
  const Swept checked = sweep(true);
  const Swept shorter = sweep(false);
  CHECK(checked.ranges_reported > 100);
  for (const Swept* o : {&checked, &shorter}) {
    CHECK(o->stats.free_ranges == o->ranges_reported);
    CHECK(std::count_if(o->records.begin(), o->records.end(),
                        [](const std::string& r) { return r.ends_with(" range"); }) ==
          static_cast<std::ptrdiff_t>(o->ranges_reported));
  }
  // Two sweepers write their records in an order of their own: compare them as sets then.
  std::vector<std::string> a = checked.records, b = shorter.records;
  if (sweepers > 1) {
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
  }
  CHECK(a == b);
  CHECK(checked.leaked == shorter.leaked);
}

// A parallel copying GC with the hooks' short paths (with and without a trace, object by object
// or in runs): each collector thread writes the moves of the tracked objects it copies into the
// stale tracker's move cards itself, except moves the cards cannot take (and, without a trace,
// a thread's first move, which takes the long path and is logged): two tracked objects
// starting in one 256-byte card (small objects that a resize made tracked) are logged, and
// then gc_end turns every card back into a log and takes the index of the moves. Either way each survivor must be found at its
// new place, and the evacuated half, freed as one range after the moves, must spare what moved.
TEST_CASE("collector hooks: moves carded by several collector threads land where they moved", "[core][profiler][threads]") {
  const bool shared_cards = GENERATE(false, true);
  const bool traced = GENERATE(false, true);  // the short paths with a trace card moves too
  // Runs of survivors adjacent before and after the copy as one on_move_range each: its tracked
  // objects are carded one by one, or (a card shared by two of them) the range is logged.
  const bool ranges = GENERATE(false, true);
  INFO("two tracked objects in one card " << shared_cards << ", trace " << traced << ", ranges " << ranges);
  constexpr std::uint64_t kHalf = 128 * 1024, kSize = 256, kThreads = 4;
  test::FakeHeap heap(2 * kHalf);
  std::vector<LeakReport> got;
  Setup setup = make_profiler(heap, kSize, /*checks=*/false, traced, got);  // the short paths
  Profiler* const prof = setup.prof.get();
  ThreadState& thread = *setup.thread;
  struct Object {
    Address from, to = 0;
    std::uint64_t size;
    bool dies, accessed;
  };
  std::mt19937_64 rng(42);
  std::vector<Object> objects;
  for (Address a = heap.at(0); a + kSize <= heap.at(kHalf);) {
    // Now and then two 64-byte objects in one card, tracked after a resize.
    const bool pair = shared_cards && rng() % 8 == 0;
    const std::uint64_t size = pair ? 64 : kSize;
    for (int k = 0; k < (pair ? 2 : 1); ++k, a += size) {
      prof->on_alloc(thread, 1, 1, a, size);
      if (pair) prof->on_resize(thread, a, kSize + 64, 1, 1);
      objects.push_back({a, 0, size, rng() % 5 == 0, rng() % 3 == 0});
    }
    if (pair) a += kSize - 2 * size;
  }
  REQUIRE(prof->gc_begin(GcKind::kFull).ok());
  REQUIRE(prof->gc_end().ok());  // epoch 0 ends: every object is tracked
  for (const Object& ob : objects)
    if (ob.accessed) access<>(thread, prof->bitmap(0), ob.from);
  // Epoch 1 ends with the copy: the survivors go to the other half in a random order, spread
  // over the collector threads.
  struct Move {
    Address from, to;
    std::uint64_t bytes, objects;
  };
  std::vector<Move> moves;
  std::uint64_t survivors = 0, in_ranges = 0;
  Address to = heap.at(kHalf);
  for (Object& ob : objects) {
    if (ob.dies) continue;
    ob.to = to;
    to += ob.size;
    ++survivors;
    if (ranges && !moves.empty() && moves.back().from + moves.back().bytes == ob.from) {
      moves.back().bytes += ob.size;  // adjacent before the copy, and after it
      ++moves.back().objects;
    } else {
      moves.push_back({ob.from, ob.to, ob.size, 1});
    }
  }
  for (const Move& m : moves) in_ranges += m.objects > 1 ? m.objects : 0;
  if (ranges) CHECK(in_ranges > survivors / 2);  // most survivors move in runs
  else CHECK(in_ranges == 0);
  std::shuffle(moves.begin(), moves.end(), rng);
  REQUIRE(prof->gc_begin(GcKind::kCopying).ok());
  std::vector<std::thread> collectors;
  for (std::uint64_t t = 0; t < kThreads; ++t)
    collectors.emplace_back([&, t] {
      for (std::size_t k = t; k < moves.size(); k += kThreads) {
        const Move& m = moves[k];
        if (m.objects == 1) prof->on_move(m.from, m.to);
        else prof->on_move_range(m.from, m.to, m.bytes);
      }
    });
  for (std::thread& c : collectors) c.join();
  prof->on_free_range(heap.at(0), kHalf);  // the evacuated half: everything there that did not move died
  REQUIRE(prof->gc_end().ok());
  CHECK(got.empty());
  // Epoch 2 ends: the survivors not accessed in epoch 1 are two epochs idle, at their new places.
  std::vector<Address> want;
  for (const Object& ob : objects)
    if (!ob.dies && !ob.accessed) want.push_back(ob.to);
  CHECK(leaks_after_an_idle_epoch(*prof, got) == want);
  CHECK(prof->stats().tracked_live == survivors);
  CHECK(prof->stats().moves == moves.size());
  CHECK(prof->protocol_status().ok());
}

// One range whose tracked objects lie far apart, at every offset in their start-bit words, and
// which ends in free memory: the short path cards each of them while it passes the empty words
// between them, and must find every one, as the checked path does. The evacuated half is then
// freed: a start the range missed would die there.
TEST_CASE("collector hooks: a range of sparse tracked objects moves every one of them", "[core][profiler]") {
  const bool checks = GENERATE(true, false);
  const bool traced = GENERATE(false, true);
  INFO("hook checks " << checks << ", trace " << traced);
  constexpr std::uint64_t kHalf = 256 * 1024, kSize = 256;
  test::FakeHeap heap(2 * kHalf);
  std::vector<LeakReport> got;
  Setup setup = make_profiler(heap, kSize, checks, traced, got);
  Profiler* const prof = setup.prof.get();
  ThreadState& thread = *setup.thread;
  std::mt19937_64 rng(7);
  struct Object {
    Address at;
    bool accessed;
  };
  std::vector<Object> objects;
  std::uint64_t long_gaps = 0;
  // Gaps of free memory of 0 to ~12 words of start bits (512 bytes each), 8-byte aligned.
  for (Address a = heap.at(0) + 8 * (rng() % 64); a + kSize <= heap.at(kHalf);) {
    prof->on_alloc(thread, 1, 1, a, kSize);
    objects.push_back({a, rng() % 3 == 0});
    const std::uint64_t gap = 8 * (rng() % 800);
    long_gaps += gap >= 5 * 512 ? 1 : 0;
    a += kSize + gap;
  }
  REQUIRE(objects.size() > 50);
  REQUIRE(long_gaps > 10);  // at least four whole empty words of start bits between two objects
  REQUIRE(prof->gc_begin(GcKind::kFull).ok());
  REQUIRE(prof->gc_end().ok());  // epoch 0 ends: every object is tracked
  for (const Object& ob : objects)
    if (ob.accessed) access<>(thread, prof->bitmap(0), ob.at);
  // Epoch 1 ends with the copy: everything from the first object to a little past the end of
  // the last (free memory) moves to the other half as one range, and the evacuated half is freed.
  const Address first = objects.front().at;
  const Address end = std::min(objects.back().at + kSize + 8 * (rng() % 800), heap.at(kHalf));
  REQUIRE(prof->gc_begin(GcKind::kCopying).ok());
  prof->on_move_range(first, first + kHalf, end - first);
  prof->on_free_range(heap.at(0), kHalf);
  REQUIRE(prof->gc_end().ok());
  CHECK(got.empty());
  // Epoch 2 ends: the objects not accessed in epoch 1 are two epochs idle, at their new places.
  std::vector<Address> want;
  for (const Object& ob : objects)
    if (!ob.accessed) want.push_back(ob.at + kHalf);
  CHECK(leaks_after_an_idle_epoch(*prof, got) == want);
  CHECK(prof->stats().tracked_live == objects.size());
  CHECK(prof->protocol_status().ok());
}

// A range's cards at the edges of card_range's word-at-a-time path: a start alone at bit 32 of
// its word of start bits (the low half empty, which the one test of both halves treats as
// crowded), two ranges that share a word (each cards its own half, the other's card taken),
// two tracked starts in one card (small objects: the range cannot be carded and is logged) and
// a range over several whole words. Checked or short, traced or not, each object
// must end up at its new place, accessed or idle as it was.
TEST_CASE("collector hooks: range moves at the edges of the card path land where they moved", "[core][profiler]") {
  const bool checks = GENERATE(true, false);
  const bool traced = GENERATE(false, true);
  INFO("hook checks " << checks << ", trace " << traced);
  constexpr std::uint64_t kHalf = 32 * 1024;
  test::FakeHeap heap(2 * kHalf);
  std::vector<LeakReport> got;
  Setup setup = make_profiler(heap, 128, checks, traced, got);
  Profiler* const prof = setup.prof.get();
  ThreadState& thread = *setup.thread;
  struct Object {
    std::uint64_t off, size;
    bool accessed;
  };
  // A word of start bits covers 512 bytes, a card 256.
  const std::vector<Object> objects = {
      {256, 256, false},                                          // word 0: bit 32 alone
      {512, 256, true},    {768, 256, false},                     // word 1: one range each
      {1024, 128, false},  {1152, 128, true}, {1280, 256, false}, // word 2: two starts in card 4
      {1536, 256, false},  {1792, 512, true}, {2304, 256, false}, // words 3 to 6: one range
      {2560, 1024, false},
  };
  for (const Object& ob : objects) prof->on_alloc(thread, 1, 1, heap.at(ob.off), ob.size);
  REQUIRE(prof->gc_begin(GcKind::kFull).ok());
  REQUIRE(prof->gc_end().ok());  // epoch 0 ends: every object is tracked
  for (const Object& ob : objects)
    if (ob.accessed) access<>(thread, prof->bitmap(0), heap.at(ob.off));
  REQUIRE(prof->gc_begin(GcKind::kCopying).ok());
  auto move = [&](std::uint64_t off, std::uint64_t bytes) { prof->on_move_range(heap.at(off), heap.at(off + kHalf), bytes); };
  move(256, 256);
  move(512, 256);
  move(768, 256);
  move(1024, 512);
  move(1536, 2048);
  prof->on_free_range(heap.at(0), kHalf);
  REQUIRE(prof->gc_end().ok());
  CHECK(got.empty());
  // Epoch 2 ends: the objects not accessed in epoch 1 are two epochs idle, at their new places.
  std::vector<Address> want;
  for (const Object& ob : objects)
    if (!ob.accessed) want.push_back(heap.at(ob.off + kHalf));
  CHECK(leaks_after_an_idle_epoch(*prof, got) == want);
  CHECK(prof->stats().tracked_live == objects.size());
  CHECK(prof->stats().moves == 5u);
  CHECK(prof->protocol_status().ok());
}

TEST_CASE("collector hooks without checks: an object moved twice in one GC is tracked once, where one move put it",
          "[core][profiler]") {
  // A protocol error (the hook checks report it); without them the profiler must still keep
  // one record of the object, at one of its two destinations, and leave its neighbours alone:
  // the cards take the later move, the index of the moves whichever it finds last.
  const int order = GENERATE(0, 1, 2, 3);  // bit 0: the first move is a range; bit 1: the second
  const bool traced = GENERATE(false, true);
  INFO("order " << order << ", trace " << traced);
  constexpr std::uint64_t kHalf = 32 * 1024;
  test::FakeHeap heap(2 * kHalf);
  std::vector<LeakReport> got;
  Setup setup = make_profiler(heap, 256, false, traced, got);
  Profiler* const prof = setup.prof.get();
  for (std::uint64_t off : {0, 512, 1024}) prof->on_alloc(*setup.thread, 1, 1, heap.at(off), 256);
  REQUIRE(prof->gc_begin(GcKind::kFull).ok());
  REQUIRE(prof->gc_end().ok());
  REQUIRE(prof->gc_begin(GcKind::kCopying).ok());
  const Address first = heap.at(kHalf), second = heap.at(kHalf + 8192);
  auto move = [&](bool range, Address to) {
    if (range) prof->on_move_range(heap.at(0), to, 256);
    else prof->on_move(heap.at(0), to);
  };
  move((order & 1) != 0, first);
  move((order & 2) != 0, second);
  prof->on_move(heap.at(512), heap.at(kHalf + 512));
  prof->on_free_range(heap.at(0), 1024);  // the object at 1024 stays where it is
  REQUIRE(prof->gc_end().ok());
  CHECK(prof->stats().tracked_live == 3);
  const std::vector<Address> leaks = leaks_after_an_idle_epoch(*prof, got);
  REQUIRE(leaks.size() == 3);
  auto count = [&](Address a) { return std::count(leaks.begin(), leaks.end(), a); };
  CHECK(count(heap.at(1024)) == 1);
  CHECK(count(heap.at(kHalf + 512)) == 1);
  CHECK(count(first) + count(second) == 1);
}

}  // namespace test_hook_short_paths
