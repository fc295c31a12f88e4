// Leak programs whose in-use objects are touched at intervals, under the two conditions that
// made GC_K alone report them: a GC storm (many GCs, little allocation each) and a thread that
// is not scheduled for many GCs. The injected leaks must be reported, grouped by site and
// ranked first; no in-use object may be. Each scenario also runs with GC_K alone to show that
// it would have fooled it.
#include "test_support.h"

#include <objprof/barrier.h>
#include <objprof/profiler.h>

#include <algorithm>
#include <vector>

namespace test_leak_groups {

using namespace objprof;
using objprof::test::FakeHeap;

namespace {

constexpr std::uint32_t kGarbage = 1, kSession = 2, kLeak = 3, kTable = 4;

struct Rig {
  FakeHeap heap{64 << 20};
  std::unique_ptr<Profiler> prof;
  std::vector<LeakGroup> groups;   // every on_leak_group call
  std::vector<LeakReport> leaks;   // every on_leak call
  std::uint64_t bump = 0;

  explicit Rig(std::uint64_t stale_after_bytes) {
    ProfilerOptions o;
    o.stale_after_epochs = 4;
    o.stale_after_bytes = stale_after_bytes;
    o.min_tracked_size = 256;
    o.on_leak_group = [this](const LeakGroup& g) { groups.push_back(g); };
    o.on_leak = [this](const LeakReport& r) { leaks.push_back(r); };
    prof = std::move(*Profiler::create(std::move(o)));
    REQUIRE(prof->add_space(heap.space()).ok());
    REQUIRE(prof->define_type({1, "Node", 0, false}).ok());
    REQUIRE(prof->define_site({kGarbage, 0, "Server.scratch", 1}).ok());
    REQUIRE(prof->define_site({kSession, 0, "Server.session", 2}).ok());
    REQUIRE(prof->define_site({kLeak, 0, "Cache.put", 3}).ok());
    REQUIRE(prof->define_site({kTable, 0, "Config.load", 4}).ok());
  }
  Address alloc(ThreadState& t, std::uint32_t site, std::uint64_t size) {
    const Address a = heap.at(bump);
    bump += size;
    REQUIRE(bump < (64u << 20));
    prof->on_alloc(t, site, 1, a, size);
    return a;
  }
  void touch(ThreadState& t, Address a) { access<>(t, prof->bitmap(0), a); }
  void gc() {
    REQUIRE(prof->gc_begin(GcKind::kFull).ok());
    REQUIRE(prof->gc_end().ok());
  }
  std::uint64_t reported_from(std::uint32_t site) const {
    return static_cast<std::uint64_t>(
        std::count_if(leaks.begin(), leaks.end(), [&](const LeakReport& r) { return r.site_id == site; }));
  }
};

// One request: scratch garbage, one leaked record, and a touch of session r % 8 (so every
// session is used once per 8 requests).
void request(Rig& rig, ThreadState& t, const std::vector<Address>& sessions, std::uint64_t r) {
  for (int i = 0; i < 64; ++i) rig.alloc(t, kGarbage, 64);
  rig.alloc(t, kLeak, 512);
  rig.touch(t, sessions[r % sessions.size()]);
}

// 10 ordinary GCs (one per 16 requests), then a storm: a GC after every request.
void storm_program(Rig& rig) {
  ThreadState& t = **rig.prof->attach_thread(1, "server");
  std::vector<Address> sessions;
  for (int i = 0; i < 8; ++i) sessions.push_back(rig.alloc(t, kSession, 1024));
  std::uint64_t r = 0;
  for (int g = 0; g < 10; ++g) {
    for (int i = 0; i < 16; ++i) request(rig, t, sessions, r++);
    rig.gc();
  }
  for (int i = 0; i < 200; ++i) {
    request(rig, t, sessions, r++);
    rig.gc();
  }
}

}  // namespace

TEST_CASE("Leak groups: a GC storm does not make sessions used every 8 requests look leaked", "[core][stale][groups]") {
  Rig rig(ProfilerOptions::kAutoStaleBytes);
  storm_program(rig);
  CHECK(rig.reported_from(kSession) == 0);
  CHECK(rig.reported_from(kLeak) > 150);
  // One group per GC that found new leaks, every one of them the leaking site.
  REQUIRE_FALSE(rig.groups.empty());
  for (const LeakGroup& g : rig.groups) {
    CHECK(g.site_id == kLeak);
    CHECK(g.method == "Cache.put");
    CHECK(g.new_objects >= 1);
    CHECK(g.objects >= g.new_objects);
    CHECK(g.oldest_idle_epochs >= g.typical_idle_epochs);
    CHECK(g.oldest_idle_epochs >= 4);
  }
  // The group grows from check to check and remembers when it was first found.
  CHECK(rig.groups.back().objects > rig.groups.front().objects);
  CHECK(rig.groups.back().first_detected == rig.groups.front().epoch);
  CHECK(rig.groups.back().last_detected == rig.groups.back().epoch);
  const std::vector<LeakGroup> now = rig.prof->possible_leak_groups();
  REQUIRE(now.size() == 1);
  CHECK(now[0].site_id == kLeak);
  CHECK(now[0].objects == rig.reported_from(kLeak));
  CHECK(now[0].bytes == 512 * now[0].objects);
}

TEST_CASE("Leak groups: GC_K alone would report the sessions during the storm", "[core][stale][groups]") {
  Rig rig(0);
  storm_program(rig);
  CHECK(rig.reported_from(kSession) == 8);
  CHECK(rig.reported_from(kLeak) > 150);
}

namespace {

// Thread A serves and leaks; thread B keeps a working set of 8 objects and runs only in
// epochs [0, 5) and from 35 on: the OS did not schedule it for 30 GCs. It last touched its
// 8th object before the pause, and never again: B's own leak.
struct PauseRun {
  std::uint64_t b_reported_during_pause = 0, b_working_set_reported = 0, b_leak_reported = 0, a_leaks = 0;
  std::vector<LeakGroup> ranking;
};

PauseRun paused_thread_program(Rig& rig) {
  ThreadState& a = **rig.prof->attach_thread(1, "A");
  ThreadState& b = **rig.prof->attach_thread(2, "B");
  std::vector<Address> a_set, b_set;
  for (int i = 0; i < 8; ++i) a_set.push_back(rig.alloc(a, kSession, 1024));
  for (int i = 0; i < 8; ++i) b_set.push_back(rig.alloc(b, kSession, 1024));
  const Address b_leak = b_set.back();
  PauseRun run;
  for (std::uint64_t e = 0; e < 50; ++e) {
    for (int i = 0; i < 256; ++i) rig.alloc(a, kGarbage, 128);
    rig.alloc(a, kLeak, 512);
    for (Address x : a_set) rig.touch(a, x);
    const bool b_runs = e < 5 || e >= 35;
    if (b_runs) {
      for (int i = 0; i < 64; ++i) rig.alloc(b, kGarbage, 128);
      for (std::size_t i = 0; i + 1 < b_set.size(); ++i) rig.touch(b, b_set[i]);
      if (e < 5) rig.touch(b, b_leak);
    }
    const std::size_t before = rig.leaks.size();
    rig.gc();
    for (std::size_t i = before; i < rig.leaks.size(); ++i) {
      const Address x = rig.leaks[i].addr;
      if (std::find(b_set.begin(), b_set.end(), x) == b_set.end()) continue;
      if (e >= 5 && e < 35) ++run.b_reported_during_pause;
      if (x == b_leak) ++run.b_leak_reported;
      else ++run.b_working_set_reported;
    }
  }
  run.a_leaks = rig.reported_from(kLeak);
  run.ranking = rig.prof->possible_leak_groups();
  return run;
}

}  // namespace

TEST_CASE("Leak groups: a thread that is not scheduled for 30 GCs keeps its working set unreported", "[core][stale][groups]") {
  Rig rig(ProfilerOptions::kAutoStaleBytes);
  const PauseRun run = paused_thread_program(rig);
  CHECK(run.b_reported_during_pause == 0);
  CHECK(run.b_working_set_reported == 0);
  // B's real leak is found once B makes progress again; A's leaks all along.
  CHECK(run.b_leak_reported == 1);
  CHECK(run.a_leaks > 30);
  // Ranked: A's leak site (many objects idle long) first, then B's one idle object.
  REQUIRE(run.ranking.size() == 2);
  CHECK(run.ranking[0].site_id == kLeak);
  CHECK(run.ranking[1].site_id == kSession);
  CHECK(run.ranking[1].objects == 1);
  CHECK(run.ranking[0].score > run.ranking[1].score);
}

TEST_CASE("Leak groups: GC_K alone reports the paused thread's working set", "[core][stale][groups]") {
  Rig rig(0);
  const PauseRun run = paused_thread_program(rig);
  CHECK(run.b_reported_during_pause == 8);
}

TEST_CASE("Leak groups: ranked by size x idle epochs, not by size", "[core][stale][groups]") {
  // A cold but live 128 KiB table (idle since its load) against many small leaked records that
  // have been idle far longer in total: the leak comes first.
  Rig rig(ProfilerOptions::kAutoStaleBytes);
  ThreadState& t = **rig.prof->attach_thread(1, "main");
  std::vector<Address> sessions;
  for (int i = 0; i < 8; ++i) sessions.push_back(rig.alloc(t, kSession, 1024));
  std::uint64_t r = 0;
  for (int g = 0; g < 60; ++g) {
    if (g == 50) rig.alloc(t, kTable, 128 << 10);
    for (int i = 0; i < 8; ++i) request(rig, t, sessions, r++);
    rig.gc();
  }
  const std::vector<LeakGroup> groups = rig.prof->possible_leak_groups();
  REQUIRE(groups.size() == 2);
  CHECK(groups[0].site_id == kLeak);
  CHECK(groups[1].site_id == kTable);
  CHECK(groups[1].bytes > groups[0].sample_size);
  CHECK(groups[0].score > groups[1].score);
  CHECK(groups[0].oldest_idle_epochs > groups[1].oldest_idle_epochs);
  // The per-object view puts the most stale bytes first too.
  const std::vector<LeakReport> objects = rig.prof->possible_leaks();
  REQUIRE(objects.size() == groups[0].objects + groups[1].objects);
  CHECK(objects.front().site_id == kTable);  // one object of 128 KiB x 9 epochs outweighs any 512-byte one
  std::uint64_t prev = ~std::uint64_t{0};
  for (const LeakReport& o : objects) {
    const std::uint64_t weight = o.size * (o.epoch - o.last_access_epoch);
    CHECK(weight <= prev);
    prev = weight;
  }
  CHECK(format_leak_group(groups[0]).find("Cache.put bci 3") != std::string::npos);
}

TEST_CASE("Leak groups: a later detection counts the group's objects reported before", "[core][stale][groups]") {
  // gc_end lists the stale objects only at a GC where one of them is new: between detections
  // nothing is called back, the on-demand views still see the old ones, and the next callback
  // of the group counts them beside the new one.
  Rig rig(0);  // GC_K alone: an epoch is a GC here
  ThreadState& t = **rig.prof->attach_thread(1, "main");
  const Address a = rig.alloc(t, kLeak, 512);
  std::uint64_t gcs = 0;
  while (rig.groups.empty() && gcs < 20) {
    rig.gc();
    ++gcs;
  }
  REQUIRE(rig.groups.size() == 1);
  CHECK(rig.groups[0].objects == 1);
  CHECK(rig.groups[0].new_objects == 1);
  CHECK(rig.groups[0].sample == a);
  const std::uint64_t first = rig.groups[0].epoch;
  // Ten more GCs with `a` stale and nothing new: no callback, and `a` is still listed.
  for (int i = 0; i < 10; ++i) rig.gc();
  CHECK(rig.groups.size() == 1);
  CHECK(rig.leaks.size() == 1);
  std::vector<LeakGroup> now = rig.prof->possible_leak_groups();
  REQUIRE(now.size() == 1);
  CHECK(now[0].objects == 1);
  CHECK(now[0].sample == a);
  REQUIRE(rig.prof->possible_leaks().size() == 1);
  // A second object of the same site goes stale: one callback for the group, both objects in it.
  const Address b = rig.alloc(t, kLeak, 1024);
  while (rig.groups.size() == 1 && gcs < 60) {
    rig.gc();
    ++gcs;
  }
  REQUIRE(rig.groups.size() == 2);
  const LeakGroup& g = rig.groups[1];
  CHECK(g.objects == 2);
  CHECK(g.new_objects == 1);
  CHECK(g.bytes == 512 + 1024);
  CHECK(g.sample == a);  // idle the longest
  CHECK(g.first_detected == first);
  CHECK(g.last_detected == g.epoch);
  CHECK(g.epoch > first + 10);
  REQUIRE(rig.leaks.size() == 2);
  CHECK(rig.leaks[1].addr == b);
  // Touched again, `b` is no longer stale; `a` still is.
  rig.touch(t, b);
  rig.gc();
  now = rig.prof->possible_leak_groups();
  REQUIRE(now.size() == 1);
  CHECK(now[0].objects == 1);
  CHECK(now[0].sample == a);
}

}  // namespace test_leak_groups
