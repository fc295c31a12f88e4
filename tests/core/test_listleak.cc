// The seeds' ListLeak scenario driven by hand through the profiler: a list whose early element
// is never touched again while the others are. Only that element may be reported, and only
// after GC_K epochs without an access; moving collectors must not change the answer.
#include "test_support.h"

#include <objprof/profiler.h>
#include <objprof/trace_reader.h>

namespace test_listleak {

using namespace objprof;
using objprof::test::FakeHeap;

namespace {

enum class Collector { kNonMoving, kCopying, kSliding };

struct Scenario {
  static constexpr std::uint32_t kNodeSite = 10, kTinySite = 11;
  static constexpr std::uint32_t kNodeType = 1, kTinyType = 2;
  static constexpr std::size_t kNodeSize = 1024, kNodes = 8, kLeaked = 2;

  explicit Scenario(std::uint32_t k, Collector collector) : collector_(collector) {
    ProfilerOptions o;
    o.stale_after_epochs = k;
    o.stale_after_bytes = 0;  // GC_K alone: the epochs here are not a program's progress
    o.min_tracked_size = 512;
    o.default_leak_printer = false;
    o.on_leak = [this](const LeakReport& r) {
      reports.push_back(r);
      type_names.emplace_back(r.type_name);
      methods.emplace_back(r.method);
    };
    auto sink = std::make_unique<MemorySink>();
    trace_ = sink.get();
    o.trace_sink = std::move(sink);
    prof = std::move(*Profiler::create(std::move(o)));
    REQUIRE(prof->add_space(heap.space()).ok());
    REQUIRE(prof->define_type({kNodeType, "ListLeak$Node", kNodeSize, false}).ok());
    REQUIRE(prof->define_type({kTinyType, "ListLeak$Tag", 16, false}).ok());
    REQUIRE(prof->define_site({kNodeSite, 0x4000, "ListLeak.add", 12}).ok());
    REQUIRE(prof->define_site({kTinySite, 0x4100, "ListLeak.tag", 4}).ok());
    thread = *prof->attach_thread(1, "main");
    for (std::size_t i = 0; i < kNodes; ++i) {
      nodes.push_back(alloc(kNodeSite, kNodeType, kNodeSize));
      access<>(*thread, prof->bitmap(0), nodes.back());
    }
    tiny = alloc(kTinySite, kTinyType, 16);  // never accessed again, but below the threshold
  }

  Address alloc(std::uint32_t site, std::uint32_t type, std::size_t size) {
    const Address a = heap.space().begin() + half_ * (heap.space().size() / 2) + bump_;
    bump_ += size;
    prof->on_alloc(*thread, site, type, a, size);
    return a;
  }

  // One epoch of the mutator: walk the list skipping the leaked node, then collect.
  void epoch() {
    for (std::size_t i = 0; i < nodes.size(); ++i)
      if (i != skip) access<>(*thread, prof->bitmap(0), nodes[i]);
    REQUIRE(prof->gc_begin(collector_ == Collector::kNonMoving ? GcKind::kFull : GcKind::kCopying).ok());
    if (collector_ == Collector::kCopying) {
      // Semi-space flip: every survivor moves to the other half, in list order.
      half_ ^= 1;
      bump_ = 0;
      for (auto& n : nodes) {
        const Address to = heap.space().begin() + half_ * (heap.space().size() / 2) + bump_;
        bump_ += kNodeSize;
        prof->on_move(n, to);
        n = to;
      }
      tiny_move();
    } else if (collector_ == Collector::kSliding) {
      // Slide the whole run of nodes down by 64 bytes in one range move.
      const Address from = nodes.front();
      prof->on_move_range(from, from - 64, kNodes * kNodeSize);
      for (auto& n : nodes) n -= 64;
      tiny_move();
    }
    REQUIRE(prof->gc_end().ok());
  }
  void tiny_move() {
    const Address to = heap.space().begin() + half_ * (heap.space().size() / 2) + bump_;
    bump_ += 16;
    prof->on_move(tiny, to);
    tiny = to;
  }
  trace::Contents trace_contents() {
    REQUIRE(prof->finish().ok());
    auto c = trace::load(trace_->data());
    REQUIRE(c.ok());
    return *c;
  }

  FakeHeap heap{1 << 20};
  std::unique_ptr<Profiler> prof;
  ThreadState* thread = nullptr;
  std::vector<Address> nodes;
  Address tiny = 0;
  std::size_t skip = kLeaked;  // the node the mutator never touches again
  std::vector<LeakReport> reports;
  std::vector<std::string> type_names, methods;  // reports hold views; keep copies

 private:
  Collector collector_;
  MemorySink* trace_ = nullptr;
  std::size_t half_ = 0, bump_ = 64 * 1024;  // room below for the sliding collector
};

}  // namespace

TEST_CASE("ListLeak: exactly the never-again accessed node is reported after GC_K epochs", "[core][listleak]") {
  auto collector = GENERATE(Collector::kNonMoving, Collector::kCopying, Collector::kSliding);
  const std::uint32_t k = GENERATE(1u, 3u);
  CAPTURE(static_cast<int>(collector), k);
  Scenario s(k, collector);
  // The nodes were created (and touched) in epoch 0. Until epoch k ends, nothing is stale.
  for (std::uint32_t e = 0; e < k; ++e) {
    s.epoch();
    CHECK(s.reports.empty());
  }
  s.epoch();  // end of epoch k: the leaked node has gone k epochs without an access
  REQUIRE(s.reports.size() == 1);
  const LeakReport& r = s.reports[0];
  CHECK(r.addr == s.nodes[Scenario::kLeaked]);  // its current address, after any moves
  CHECK(r.size == Scenario::kNodeSize);
  CHECK(r.site_id == Scenario::kNodeSite);
  CHECK(s.methods[0] == "ListLeak.add");
  CHECK(s.type_names[0] == "ListLeak$Node");
  CHECK(r.bytecode_offset == 12);
  CHECK(r.last_access_epoch == 0);
  CHECK(r.epoch == k);
  // Reported once: more epochs add no reports, but the object stays listed as a possible leak.
  for (int e = 0; e < 3; ++e) s.epoch();
  CHECK(s.reports.size() == 1);
  auto leaks = s.prof->possible_leaks();
  REQUIRE(leaks.size() == 1);
  CHECK(leaks[0].addr == s.nodes[Scenario::kLeaked]);

  // The trace records the report too.
  auto c = s.trace_contents();
  REQUIRE(c.stale.size() == 1);
  CHECK(c.stale[0].epoch == k);
  CHECK(c.stale[0].last_access_epoch == 0);
}

TEST_CASE("ListLeak: a stale node that is freed is not reported, and one touched again is not listed", "[core][listleak]") {
  Scenario s(2, Collector::kNonMoving);
  s.epoch();
  // Free the leaked node during the next GC (it became unreachable) before it goes stale.
  const Address leaked = s.nodes[Scenario::kLeaked];
  s.nodes.erase(s.nodes.begin() + Scenario::kLeaked);
  s.skip = SIZE_MAX;
  REQUIRE(s.prof->gc_begin(GcKind::kFull).ok());
  s.prof->on_free(leaked);
  REQUIRE(s.prof->gc_end().ok());
  for (int e = 0; e < 4; ++e) s.epoch();
  for (auto& r : s.reports) UNSCOPED_INFO("reported " << r.addr << " last " << r.last_access_epoch << " at " << r.epoch);
  CHECK(s.reports.empty());
  CHECK(s.prof->possible_leaks().empty());
  CHECK(s.prof->stats().tracked_live == Scenario::kNodes - 1);
}

TEST_CASE("Thread caches are reset at every GC so the next access is recorded", "[core][profiler]") {
  Scenario s(10, Collector::kNonMoving);
  const Address n = s.nodes[0];
  // nodes.back() was the last access: it sits in the cache.
  CHECK(s.thread->cache.load() == s.nodes.back());
  REQUIRE(s.prof->gc_begin(GcKind::kFull).ok());
  CHECK(s.thread->cache.load() == 0);
  REQUIRE(s.prof->gc_end().ok());
  CHECK(s.thread->cache.load() == 0);
  // Epoch 1: touch only the object that was cached before the GC.
  access<>(*s.thread, s.prof->bitmap(0), s.nodes.back());
  access<>(*s.thread, s.prof->bitmap(0), n);
  REQUIRE(s.prof->gc_begin(GcKind::kFull).ok());
  REQUIRE(s.prof->gc_end().ok());
  auto c = s.trace_contents();
  auto marked = c.marked_addresses(1);
  CHECK(marked == std::vector<std::uint64_t>{n, s.nodes.back()});
}

TEST_CASE("Profiler reports protocol misuse as errors", "[core][profiler]") {
  Scenario s(2, Collector::kNonMoving);
  auto st = s.prof->gc_end();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().code == ErrorCode::kProtocol);
  REQUIRE(s.prof->gc_begin(GcKind::kFull).ok());
  CHECK_FALSE(s.prof->gc_begin(GcKind::kFull).ok());
  REQUIRE(s.prof->gc_end().ok());
  CHECK_FALSE(s.prof->add_space(s.heap.space()).ok());                 // too late
  CHECK_FALSE(s.prof->define_type({1, "Again", 8, false}).ok());        // duplicate id
  CHECK_FALSE(s.prof->attach_thread(1, "dup").ok());                    // id in use
  auto bad = Profiler::create([] { ProfilerOptions o; o.stale_after_epochs = 0; return o; }());
  CHECK_FALSE(bad.ok());
}

TEST_CASE("Profiler keeps 16 bytes per tracked object", "[core][profiler]") {
  FakeHeap heap(std::size_t{64} << 20);
  ProfilerOptions o;
  o.min_tracked_size = 64;
  o.default_leak_printer = false;
  auto p = Profiler::create(std::move(o));
  REQUIRE(p.ok());
  REQUIRE((*p)->add_space(heap.space()).ok());
  ThreadState* t = *(*p)->attach_thread(0, "t");
  constexpr std::size_t kObjects = 100000;
  for (std::size_t i = 0; i < kObjects; ++i) (*p)->on_alloc(*t, 1, 1, heap.at(i * 128), 128);
  REQUIRE((*p)->gc_begin(GcKind::kFull).ok());
  REQUIRE((*p)->gc_end().ok());
  const auto st = (*p)->stats();
  CHECK(st.tracked_live == kObjects);
  // The table (growth slack at most 2x), and the thread's record buffer of the epoch, held by
  // the tracker until the next gc_begin hands it back.
  CHECK(st.tracker_bytes <= kObjects * 16 * 2 + kObjects * 16 * 2);
  CHECK(st.tracker_bytes >= kObjects * 16 * 2);
  // An epoch without allocations: the buffer went back to the thread, the table remains.
  REQUIRE((*p)->gc_begin(GcKind::kFull).ok());
  REQUIRE((*p)->gc_end().ok());
  const auto st2 = (*p)->stats();
  CHECK(st2.tracked_live == kObjects);
  CHECK(st2.tracker_bytes <= kObjects * 16 * 2);  // vector growth slack at most 2x
  CHECK(st2.tracker_bytes >= kObjects * 16);
}

}  // namespace test_listleak
