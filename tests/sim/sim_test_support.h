// Shared by the sim's heap tests: a root set and a profiler that checks every hook.
#pragma once

#include "sim/heap.h"

#include <objprof/profiler.h>
#include <objprof/trace_sink.h>

#include <catch2/catch.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace objprof::test {

// The root set: a vector of slots the collector visits (and updates when it moves their
// objects); empty slots (0) are skipped.
struct SlotRoots : sim::RootProvider {
  std::vector<std::uint64_t> slots;
  SlotRoots() = default;
  explicit SlotRoots(std::size_t n) : slots(n) {}
  void visit_roots(const sim::RootFn& fn) override {
    for (auto& s : slots)
      if (s) fn(s);
  }
};

// A profiler with the hook checks on, its protocol errors collected (not fatal: a test asserts
// there are none), its trace in memory and no leak printing.
struct CheckedProfiler {
  MemorySink* sink = nullptr;
  std::vector<std::string> errors;
  std::unique_ptr<Profiler> prof;

  CheckedProfiler() {
    ProfilerOptions po;
    po.check_hooks = true;
    po.on_protocol_error = [this](const ProtocolError& e) { errors.push_back(e.message); };
    auto s = std::make_unique<MemorySink>();
    sink = s.get();
    po.trace_sink = std::move(s);
    po.default_leak_printer = false;
    po.on_leak = {};
    prof = std::move(*Profiler::create(std::move(po)));
  }
  CheckedProfiler(const CheckedProfiler&) = delete;
  CheckedProfiler& operator=(const CheckedProfiler&) = delete;
};

// A heap and the profiler it reports to, for tests that run a workload: no leak printing;
// `profiler` and `heap` set what the test is about on top of that.
struct SimRig {
  std::unique_ptr<Profiler> prof;
  std::unique_ptr<sim::Heap> heap;

  explicit SimRig(std::uint64_t heap_bytes, const std::function<void(ProfilerOptions&)>& profiler = {},
                  const std::function<void(sim::HeapOptions&)>& heap_options = {}) {
    ProfilerOptions po;
    po.default_leak_printer = false;
    po.on_leak = {};
    if (profiler) profiler(po);
    auto p = Profiler::create(std::move(po));
    REQUIRE(p.ok());
    prof = std::move(*p);
    sim::HeapOptions ho;
    ho.heap_bytes = heap_bytes;
    if (heap_options) heap_options(ho);
    auto h = sim::Heap::create(ho, prof.get());
    REQUIRE(h.ok());
    heap = std::move(*h);
  }
};

}  // namespace objprof::test
