// Helpers shared by the core tests: a fake heap (aligned, real memory) to hand out addresses.
#pragma once

#include <objprof/analysis/analyzer.h>
#include <objprof/barrier.h>
#include <objprof/heap_space.h>
#include <objprof/profiler.h>
#include <objprof/trace_sink.h>

#include "../test_env.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace objprof::test {

// A block of real, aligned memory standing in for a heap space.
class FakeHeap {
 public:
  explicit FakeHeap(std::size_t bytes, std::uint32_t alignment = 8)
      // aligned_alloc wants a size that is a multiple of the alignment.
      : bytes_(bytes), mem_(static_cast<std::uint8_t*>(std::aligned_alloc(4096, (bytes + 4095) & ~std::size_t{4095})), &std::free) {
    REQUIRE(mem_ != nullptr);
    auto s = HeapSpace::make(reinterpret_cast<Address>(mem_.get()), reinterpret_cast<Address>(mem_.get()) + bytes,
                             alignment, "fake");
    REQUIRE(s.ok());
    space_ = *s;
  }
  const HeapSpace& space() const { return space_; }
  Address at(std::size_t offset) const { return space_.begin() + offset; }

 private:
  std::size_t bytes_;
  std::unique_ptr<std::uint8_t, void (*)(void*)> mem_;
  HeapSpace space_;
};

// The rigs' option defaults: hook checks on, GC_K = 2 alone (the rigs' epochs are not a
// program's progress), 1 KiB tracked, no printer.
inline void rig_defaults(ProfilerOptions& o) {
  o.check_hooks = true;
  o.stale_after_epochs = 2;
  o.stale_after_bytes = 0;
  o.min_tracked_size = 1024;
  o.default_leak_printer = false;
}

// Two runs of one program on two heaps found the same leaks, at the same offsets in their heaps.
inline void require_same_leaks(const std::vector<LeakReport>& a, Address a_base, const std::vector<LeakReport>& b,
                               Address b_base) {
  REQUIRE(a.size() == b.size());
  CHECK(!a.empty());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].addr - a_base == b[i].addr - b_base);
    CHECK(a[i].site_id == b[i].site_id);
    CHECK(a[i].size == b[i].size);
    CHECK(a[i].last_access_epoch == b[i].last_access_epoch);
    CHECK(a[i].epoch == b[i].epoch);
  }
}

// Two runs of one program ended tracking the same objects and found the same leaks: the same
// counts, and the same reports at the same offsets in their heaps.
inline void require_same_tracking(const Profiler& a, const std::vector<LeakReport>& a_leaks, Address a_base,
                                  const Profiler& b, const std::vector<LeakReport>& b_leaks, Address b_base) {
  const ProfilerStats x = a.stats(), y = b.stats();
  CHECK(x.objects_tracked == y.objects_tracked);
  CHECK(x.tracked_live == y.tracked_live);
  CHECK(x.leaks_reported == y.leaks_reported);
  require_same_leaks(a_leaks, a_base, b_leaks, b_base);
}

// A profiler over a FakeHeap with one attached thread ("main", id 1) and hook checking on,
// collecting what it reports; the trace goes to memory. Tests derive their rigs from it and
// define their types and sites.
struct ProfilerRig {
  FakeHeap heap;
  MemorySink* sink = nullptr;
  std::vector<LeakReport> leaks;
  std::vector<ProtocolError> errors;
  std::vector<std::string> messages;  // each error's message, copied (ProtocolError views the profiler's)
  std::unique_ptr<Profiler> prof;
  ThreadState* thread = nullptr;

  // `configure` sets what the test is about (GC_K, tracked size, walker...) on options that
  // default to GC_K = 2 alone (the rigs' epochs are not a program's progress) and 1 KiB.
  explicit ProfilerRig(std::size_t heap_bytes, const std::function<void(ProfilerOptions&)>& configure = {})
      : heap(heap_bytes) {
    ProfilerOptions o;
    rig_defaults(o);
    auto s = std::make_unique<MemorySink>();
    sink = s.get();
    o.trace_sink = std::move(s);
    o.on_leak = [this](const LeakReport& r) { leaks.push_back(r); };
    o.on_protocol_error = [this](const ProtocolError& e) {
      errors.push_back(e);
      messages.emplace_back(e.message);
    };
    if (configure) configure(o);
    prof = std::move(*Profiler::create(std::move(o)));
    REQUIRE(prof->add_space(heap.space()).ok());
    thread = *prof->attach_thread(1, "main");
  }
  Address at(std::size_t off) const { return heap.at(off); }
  void touch(std::size_t off) { access(*thread, prof->barrier_descriptor(0), heap.at(off)); }
  void gc(GcKind kind = GcKind::kFull) {
    REQUIRE(prof->gc_begin(kind).ok());
    REQUIRE(prof->gc_end().ok());
  }
  // Finishes the trace and analyzes it.
  analysis::TraceAnalysis analyze() {
    REQUIRE(prof->finish().ok());
    auto a = analysis::analyze(std::span<const std::byte>(sink->data()));
    REQUIRE(a.ok());
    return std::move(*a);
  }
};

inline void require_same_tracking(const ProfilerRig& a, const ProfilerRig& b) {
  require_same_tracking(*a.prof, a.leaks, a.heap.space().begin(), *b.prof, b.leaks, b.heap.space().begin());
}

}  // namespace objprof::test
