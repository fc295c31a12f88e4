// Collector correctness under stress: a random object graph mutated through the sim heap's
// API beside a shadow model, many GCs of both kinds, and after every GC a parallel walk of the
// real and the shadow graph (every reachable object's contents intact after each move, sharing
// preserved), plus "the heap holds exactly the reachable objects" (everything unreachable
// freed; a lazy sweep is finished first). With the profiler attached, the trace is read back and
// replayed: every alloc has exactly one death or is live at the end, and moves chain from live
// addresses. The lazy sweeper's walks between explicit GCs run with its sweep pending, so they
// check that allocation during a sweep never overwrites a live object. With compaction on,
// every other explicit GC of a mark-sweep heap slides the survivors (the same checks hold).
#include "sim/heap.h"
#include "sim_test_support.h"

#include "../test_env.h"

#include <objprof/objprof.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <iterator>
#include <map>
#include <set>
#include <unistd.h>

namespace objprof::sim::test_sim_heap {
namespace {

std::uint64_t next_rand(std::uint64_t& s) {
  std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

using Roots = test::SlotRoots;

enum Kind { kNode, kRefArray, kIntArray };

struct Shadow {
  Kind kind;
  std::vector<std::int64_t> scalars;  // node: {v}; int array: elements
  std::vector<int> refs;              // node: r0..r2; ref array: elements (-1 = null)
};

struct Stress {
  Heap& heap;
  Mutator& m;
  std::uint32_t node_t, refarr_t, intarr_t;
  Roots roots;
  std::vector<int> root_ids;
  std::vector<Shadow> shadow;
  std::uint64_t rng = 42;

  static constexpr std::size_t kRoots = 24;

  std::uint64_t r(std::uint64_t n) { return next_rand(rng) % n; }

  Address alloc(Kind k, std::uint64_t len) {
    const std::uint32_t t = k == kNode ? node_t : k == kRefArray ? refarr_t : intarr_t;
    auto a = heap.allocate(m, 1 + static_cast<std::uint32_t>(k), t, len);
    REQUIRE(a.ok());
    const int id = static_cast<int>(shadow.size());
    Shadow s{k, {}, {}};
    if (k == kNode) {
      s.refs.assign(3, -1);
      s.scalars.push_back(id * 7);
      Heap::store(*a, 3, static_cast<std::uint64_t>(id));
      Heap::store(*a, 4, static_cast<std::uint64_t>(id * 7));
    } else if (k == kRefArray) {
      s.refs.assign(len, -1);
    } else {
      for (std::uint64_t i = 0; i < len; ++i) {
        s.scalars.push_back(id * 1000 + static_cast<std::int64_t>(i));
        Heap::store(*a, i, static_cast<std::uint64_t>(s.scalars.back()));
      }
    }
    shadow.push_back(std::move(s));
    return *a;
  }

  void step() {
    const std::size_t i = r(kRoots);
    switch (r(10)) {
      case 0: case 1: case 2: {  // allocate into a root (the old object may die)
        const Kind k = static_cast<Kind>(r(3));
        std::uint64_t len = k == kNode ? 0 : r(64);
        if (k == kIntArray && r(50) == 0) len = 2000;  // a large object
        (void)alloc(kIntArray, r(96));  // garbage: pressure for allocation-triggered GCs
        (void)alloc(kRefArray, r(32));
        const Address a = alloc(k, len);
        roots.slots[i] = a;
        root_ids[i] = static_cast<int>(shadow.size() - 1);
        break;
      }
      case 3: case 4: case 5: {  // link root i -> root j (or null)
        if (!roots.slots[i]) break;
        Shadow& s = shadow[static_cast<std::size_t>(root_ids[i])];
        if (s.refs.empty()) break;
        const std::size_t k = r(s.refs.size());
        const std::size_t j = r(kRoots);
        const bool null = r(8) == 0 || !roots.slots[j];
        Heap::store(roots.slots[i], s.kind == kNode ? k : k, null ? 0 : roots.slots[j]);
        s.refs[k] = null ? -1 : root_ids[j];
        break;
      }
      case 6: case 7: {  // walk: root j = a child of root i
        if (!roots.slots[i]) break;
        Shadow& s = shadow[static_cast<std::size_t>(root_ids[i])];
        if (s.refs.empty()) break;
        const std::size_t k = r(s.refs.size());
        if (s.refs[k] < 0) break;
        const std::size_t j = r(kRoots);
        roots.slots[j] = Heap::load(roots.slots[i], k);
        root_ids[j] = s.refs[k];
        break;
      }
      case 8: {  // scalar write
        if (!roots.slots[i]) break;
        Shadow& s = shadow[static_cast<std::size_t>(root_ids[i])];
        if (s.scalars.empty()) break;
        const std::size_t k = r(s.scalars.size());
        s.scalars[k] = static_cast<std::int64_t>(next_rand(rng) >> 1);
        Heap::store(roots.slots[i], s.kind == kNode ? 4 : k, static_cast<std::uint64_t>(s.scalars[k]));
        break;
      }
      default:  // drop a root
        roots.slots[i] = 0;
        root_ids[i] = -1;
        break;
    }
  }

  // Walks real and shadow graphs together; returns the reachable addresses.
  std::set<Address> verify() {
    std::map<int, Address> seen;
    std::vector<std::pair<int, Address>> work;
    for (std::size_t i = 0; i < kRoots; ++i) {
      REQUIRE((roots.slots[i] == 0) == (root_ids[i] < 0));
      if (roots.slots[i]) work.emplace_back(root_ids[i], roots.slots[i]);
    }
    while (!work.empty()) {
      auto [id, a] = work.back();
      work.pop_back();
      auto [it, inserted] = seen.emplace(id, a);
      REQUIRE(it->second == a);  // one object, one address: sharing preserved
      if (!inserted) continue;
      REQUIRE(heap.contains(a));
      REQUIRE(a % 8 == 0);
      const Shadow& s = shadow[static_cast<std::size_t>(id)];
      const std::uint32_t want_type = s.kind == kNode ? node_t : s.kind == kRefArray ? refarr_t : intarr_t;
      REQUIRE(Heap::header(a).type == want_type);
      REQUIRE(Heap::header(a).flags == 0);
      if (s.kind == kNode) {
        REQUIRE(Heap::load(a, 3) == static_cast<std::uint64_t>(id));
        REQUIRE(Heap::load(a, 4) == static_cast<std::uint64_t>(s.scalars[0]));
      } else if (s.kind == kIntArray) {
        REQUIRE(heap.slot_count(a) == s.scalars.size());
        for (std::size_t k = 0; k < s.scalars.size(); ++k)
          REQUIRE(Heap::load(a, k) == static_cast<std::uint64_t>(s.scalars[k]));
      } else {
        REQUIRE(heap.slot_count(a) == s.refs.size());
      }
      for (std::size_t k = 0; k < s.refs.size(); ++k) {
        const Address child = Heap::load(a, k);
        if (s.refs[k] < 0) {
          REQUIRE(child == 0);
        } else {
          REQUIRE(child != 0);
          work.emplace_back(s.refs[k], child);
        }
      }
    }
    std::set<Address> out;
    for (auto& [id, a] : seen) out.insert(a);
    return out;
  }
};

SimType node_type() {
  SimType t;
  t.name = "Node";
  t.field_names = {"r0", "r1", "r2", "id", "v"};
  t.slot_is_ref = {1, 1, 1, 0, 0};
  return t;
}

// Replays a trace: addr -> alloc index of the live objects.
struct Replay {
  std::map<std::uint64_t, std::size_t> live;
  std::vector<int> deaths;  // per alloc
};

// evacuating: a copying collector's trace (free ranges are whole from-spaces).
Replay replay(const trace::Contents& c, bool evacuating) {
  Replay rp;
  rp.deaths.assign(c.allocs.size(), 0);
  std::uint64_t max_epoch = 0;
  for (auto& a : c.allocs) max_epoch = std::max(max_epoch, a.epoch);
  for (auto& f : c.frees) max_epoch = std::max(max_epoch, f.epoch);
  for (auto& m : c.moves) max_epoch = std::max(max_epoch, m.epoch);
  for (std::uint64_t e = 0; e <= max_epoch; ++e) {
    for (std::size_t i = 0; i < c.allocs.size(); ++i) {
      if (c.allocs[i].epoch != e) continue;
      INFO("alloc at " << c.allocs[i].addr << " in epoch " << e);
      REQUIRE(rp.live.emplace(c.allocs[i].addr, i).second);  // no overlap with a live object
    }
    for (auto& f : c.frees) {
      if (f.epoch != e || f.range) continue;
      INFO("free of " << f.addr << " in epoch " << e);
      auto it = rp.live.find(f.addr);
      REQUIRE(it != rp.live.end());  // frees only live objects
      ++rp.deaths[it->second];
      rp.live.erase(it);
    }
    // The GC's moved objects leave their pre-GC places before its free ranges apply: a range
    // frees only what did not move (the semispace reports its whole from-space as one).
    std::vector<std::pair<std::uint64_t, std::size_t>> moved;
    for (auto& m : c.moves) {
      if (m.epoch != e) continue;
      if (m.range) {
        // A run of neighbours moved together (HeapOptions::move_ranges): every live object
        // that starts in it moves by the same distance. A lone one is an on_move.
        INFO("move range at " << m.from << " (" << m.bytes << " bytes) in epoch " << e);
        const auto first = rp.live.lower_bound(m.from), last = rp.live.lower_bound(m.from + m.bytes);
        REQUIRE(first != last);
        REQUIRE(first->first == m.from);  // a run starts at an object
        REQUIRE(std::distance(first, last) >= 2);
        for (auto it = first; it != last; ++it) moved.emplace_back(it->first - m.from + m.to, it->second);
        rp.live.erase(first, last);
        continue;
      }
      auto it = rp.live.find(m.from);
      INFO("move from " << m.from << " in epoch " << e);
      REQUIRE(it != rp.live.end());  // moves chain: from is a live (pre-GC) address
      moved.emplace_back(m.to, it->second);
      rp.live.erase(it);
    }
    for (auto& f : c.frees) {
      if (f.epoch != e || !f.range) continue;
      INFO("free range at " << f.addr << " in epoch " << e);
      const auto first = rp.live.lower_bound(f.addr), last = rp.live.lower_bound(f.addr + f.bytes);
      // A sweep's range (the cells between two survivors) holds a dead object at least; an
      // evacuated from-space holds whatever did not move, maybe nothing.
      if (!evacuating) REQUIRE(std::distance(first, last) >= 1);
      for (auto it = first; it != last; ++it) ++rp.deaths[it->second];
      rp.live.erase(first, last);
    }
    for (auto& [to, idx] : moved) REQUIRE(rp.live.emplace(to, idx).second);
  }
  return rp;
}

// compact: every other explicit GC of a mark-sweep heap compacts (Heap::compact).
void run_stress(GcPolicy policy, bool profile, std::size_t steps, bool parallel_mark = false, bool compact = false) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("objprof-sim-stress-" + std::to_string(::getpid()) + "-" +
                                                  gc_policy_name(policy) + ".trace")).string();
  std::unique_ptr<Profiler> prof;
  if (profile) {
    ProfilerOptions po;
    po.trace_path = path;
    po.default_leak_printer = false;
    po.on_leak = {};
    auto p = Profiler::create(std::move(po));
    REQUIRE(p.ok());
    prof = std::move(*p);
  }
  HeapOptions ho;
  ho.gc = policy;
  ho.heap_bytes = 256 * 1024;
  ho.parallel_mark_min_heap = parallel_mark ? 0 : ~0ull;
  auto h = Heap::create(ho, prof.get());
  REQUIRE(h.ok());
  Heap& heap = **h;
  std::uint32_t node_t = *heap.add_type(node_type());
  SimType ra;
  ra.name = "ref[]";
  ra.is_array = true;
  ra.elem_is_ref = true;
  std::uint32_t refarr_t = *heap.add_type(ra);
  SimType ia;
  ia.name = "int[]";
  ia.is_array = true;
  std::uint32_t intarr_t = *heap.add_type(ia);
  ThreadState* ts = nullptr;
  if (prof) {
    for (std::uint32_t s = 1; s <= 3; ++s) REQUIRE(prof->define_site({s, 0, "stress", s}).ok());
    ts = *prof->attach_thread(1, "stress");
  }
  Mutator m{nullptr, ts};
  Stress st{heap, m, node_t, refarr_t, intarr_t, {}, {}, {}};
  m.roots = &st.roots;
  st.roots.slots.assign(Stress::kRoots, 0);
  st.root_ids.assign(Stress::kRoots, -1);
  heap.attach_mutator(&m);
  // The mark's own time is part of a mark-sweep GC's; a copying GC has no separate mark.
  std::size_t marks_timed = 0;
  heap.on_gc = [&](const GcInfo& g) {
    if (policy == GcPolicy::kSemiSpace) {
      CHECK(g.mark_seconds == 0);
    } else {
      CHECK(g.mark_seconds > 0);
      CHECK(g.mark_seconds <= g.seconds);
      ++marks_timed;
    }
  };
  std::size_t walks_in_sweep = 0;
  for (std::size_t i = 0; i < steps; ++i) {
    st.step();
    // Contents intact across the GCs allocation started; walked more often while a lazy sweep
    // is pending, the time when allocation could overwrite a live object.
    const bool sweeping = heap.sweeping();
    if (i % 97 == 0 || (sweeping && i % 13 == 0)) {
      (void)st.verify();
      walks_in_sweep += sweeping;
    }
    if (i % 997 == 0) {
      REQUIRE((compact && (i / 997) % 2 == 1 ? heap.compact(m) : heap.collect(m)).ok());
      // A lazy sweep still holds unswept dead objects: finish it for the exact comparison.
      REQUIRE(heap.finish_sweep(m).ok());
      const std::set<Address> reachable = st.verify();
      std::set<Address> present;
      heap.for_each_object([&](Address a) { present.insert(a); });
      REQUIRE(present == reachable);  // nothing reachable freed, everything unreachable freed
    }
  }
  (void)st.verify();
  // Explicit GCs plus the ones allocation failures started.
  CHECK(heap.stats().gcs > steps / 997 + 3);
  CHECK(heap.stats().large_objects_allocated > 0);
  if (policy != GcPolicy::kSemiSpace) CHECK(marks_timed == heap.stats().gcs);
  if (compact) CHECK(heap.stats().compactions >= steps / 997 / 2);
  if (policy == GcPolicy::kLazySweep) {
    CHECK(walks_in_sweep > 0);  // some walks ran with a sweep pending
    CHECK(heap.stats().objects_reused_in_sweep > 0);
  }
  heap.detach_mutator(&m);
  if (!prof) return;
  prof->detach_thread(*ts);
  REQUIRE(prof->finish().ok());
  auto c = trace::load_file(path);
  std::filesystem::remove(path);
  REQUIRE(c.ok());
  REQUIRE(c->allocs.size() == heap.stats().objects_allocated);
  REQUIRE(c->gc_begins.size() == heap.stats().gcs);
  std::uint64_t compacting = 0;
  for (auto& g : c->gc_begins) {
    compacting += g.kind == GcKind::kCompacting;
    REQUIRE((g.kind == gc_policy_kind(policy) || g.kind == GcKind::kCompacting));
  }
  REQUIRE(compacting == heap.stats().compactions);
  const Replay rp = replay(*c, policy == GcPolicy::kSemiSpace);
  std::set<Address> present;
  heap.for_each_object([&](Address a) { present.insert(a); });
  std::set<Address> traced;
  for (auto& [addr, idx] : rp.live) traced.insert(addr);
  REQUIRE(traced == present);  // the profiler's view of the live heap is the heap's truth
  std::set<std::size_t> live_allocs;
  for (auto& [addr, idx] : rp.live) live_allocs.insert(idx);
  for (std::size_t i = 0; i < rp.deaths.size(); ++i)
    REQUIRE(rp.deaths[i] + (live_allocs.count(i) ? 1 : 0) == 1);  // exactly one death, or live at the end
}

}  // namespace

TEST_CASE("semispace collector keeps a random object graph intact over many GCs", "[sim]") {
  run_stress(GcPolicy::kSemiSpace, false, 20000);
}

TEST_CASE("mark-sweep collector keeps a random object graph intact and frees the rest", "[sim]") {
  run_stress(GcPolicy::kMarkSweep, false, 20000);
}

TEST_CASE("mark-sweep with oneTBB parallel marking keeps the graph intact and frees exactly the rest", "[sim]") {
  // Same oracle as the serial collector: after every GC the heap holds exactly the reachable
  // objects, with their contents (ThreadSanitizer builds mark serially: see sim/heap.cc).
  run_stress(GcPolicy::kMarkSweep, false, test::scaled(20000, 4), true);
}

TEST_CASE("mark-sweep with parallel marking: the trace matches the heap", "[sim]") {
  run_stress(GcPolicy::kMarkSweep, true, 3000, true);
}

TEST_CASE("semispace: profiler trace matches the heap (allocs, moves, deaths)", "[sim]") {
  run_stress(GcPolicy::kSemiSpace, true, 3000);
}

TEST_CASE("mark-sweep: profiler trace matches the heap (allocs, deaths)", "[sim]") {
  run_stress(GcPolicy::kMarkSweep, true, 3000);
}

TEST_CASE("lazy sweep keeps a random object graph intact and frees exactly the rest", "[sim][lazysweep]") {
  run_stress(GcPolicy::kLazySweep, false, 20000);
}

TEST_CASE("lazy sweep: profiler trace matches the heap (allocs in the bracket, deaths)", "[sim][lazysweep]") {
  run_stress(GcPolicy::kLazySweep, true, 3000);
}

TEST_CASE("mark-sweep compaction keeps a random object graph intact and frees exactly the rest", "[sim][fragmentation]") {
  run_stress(GcPolicy::kMarkSweep, false, 20000, false, true);
  run_stress(GcPolicy::kLazySweep, false, 20000, false, true);
}

TEST_CASE("mark-sweep compaction: the trace's moves and frees replay to the heap", "[sim][fragmentation]") {
  run_stress(GcPolicy::kMarkSweep, true, 3000, false, true);
  run_stress(GcPolicy::kLazySweep, true, 3000, true, true);
}

TEST_CASE("out of memory is an error naming the heap size", "[sim]") {
  HeapOptions ho;
  ho.heap_bytes = 64 * 1024;
  for (GcPolicy p : kAllGcPolicies) {
    ho.gc = p;
    INFO(gc_policy_name(p));
    auto h = Heap::create(ho, nullptr);
    REQUIRE(h.ok());
    Heap& heap = **h;
    SimType ra;
    ra.name = "ref[]";
    ra.is_array = true;
    ra.elem_is_ref = true;
    const std::uint32_t t = *heap.add_type(ra);
    Roots roots;
    Mutator m{&roots, nullptr};
    heap.attach_mutator(&m);
    Result<Address> last = Address{0};
    for (int i = 0; i < 10000 && last.ok(); ++i) {
      last = heap.allocate(m, 1, t, 32);
      if (last.ok()) roots.slots.push_back(*last);  // keep everything alive
    }
    REQUIRE_FALSE(last.ok());
    CHECK(last.error().message.find("out of memory") != std::string::npos);
    CHECK(last.error().message.find("64.0 KiB") != std::string::npos);
    // A too-large object fails the same way.
    auto big = heap.allocate(m, 1, t, 1 << 20);
    REQUIRE_FALSE(big.ok());
    CHECK(big.error().message.find("out of memory") != std::string::npos);
    heap.detach_mutator(&m);
  }
}

TEST_CASE("parse_size understands units and rejects junk", "[sim]") {
  CHECK(*parse_size("4M") == 4u << 20);
  CHECK(*parse_size("512k") == 512u << 10);
  CHECK(*parse_size("1G") == 1u << 30);
  CHECK(*parse_size("4096") == 4096u);
  CHECK_FALSE(parse_size("M").ok());
  CHECK_FALSE(parse_size("4X").ok());
  CHECK_FALSE(parse_size("").ok());
}

}  // namespace objprof::sim
