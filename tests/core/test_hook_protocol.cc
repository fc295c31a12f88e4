// The hook protocol's debug checks (ProfilerOptions::check_hooks): every misuse is reported
// once, naming the hook and the address, and correct use reports nothing.
#include <objprof/profiler.h>
#include <objprof/trace_reader.h>

#include "test_support.h"

#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace test_hook_protocol {

using namespace objprof;
using objprof::test::FakeHeap;
using objprof::test::ProfilerRig;

namespace {

struct Rig : ProfilerRig {
  // The profiler's defaults, but for the checks.
  explicit Rig(bool check = true)
      : ProfilerRig(1 << 16, [&](ProfilerOptions& o) {
          const ProfilerOptions defaults;
          o.check_hooks = check;
          o.stale_after_epochs = defaults.stale_after_epochs;
          o.stale_after_bytes = defaults.stale_after_bytes;
          o.min_tracked_size = defaults.min_tracked_size;
        }) {}
  void alloc(std::size_t off, std::uint64_t size = 64) { prof->on_alloc(*thread, 1, 1, heap.at(off), size); }
  void gc(const std::function<void()>& collector = [] {}) {
    REQUIRE(prof->gc_begin(GcKind::kFull).ok());
    collector();
    REQUIRE(prof->gc_end().ok());
  }
  // The one error reported so far must come from `hook` at heap offset `off`.
  void expect_one(std::string_view hook, std::size_t off) {
    REQUIRE(errors.size() == 1);
    CHECK(errors[0].hook == hook);
    CHECK(errors[0].addr == heap.at(off));
    CHECK(messages[0].find(std::string(hook)) != std::string::npos);
    CHECK(prof->stats().protocol_errors == 1);
    CHECK(prof->protocol_status().error().code == ErrorCode::kProtocol);
  }
};

}  // namespace

TEST_CASE("hook checks: a correct collector reports nothing", "[core][protocol]") {
  Rig r;
  r.alloc(0);
  r.alloc(64);
  r.alloc(128, 128);
  r.gc([&] {
    r.prof->on_free(r.heap.at(0));
    r.prof->on_move(r.heap.at(64), r.heap.at(0));  // onto memory freed in the same GC
    r.prof->on_move_range(r.heap.at(128), r.heap.at(1024), 128);
  });
  r.alloc(64);  // the memory the moved object left
  r.gc([&] { r.prof->on_free(r.heap.at(1024)); });
  CHECK(r.errors.empty());
  CHECK(r.prof->protocol_status().ok());
  CHECK(r.prof->stats().protocol_errors == 0);
}

TEST_CASE("hook checks: collector hooks outside gc_begin/gc_end are refused even without check_hooks",
          "[core][protocol]") {
  for (bool check : {false, true}) {
    Rig r(check);
    r.alloc(0, 512);  // tracked (>= 256 bytes)
    r.prof->on_free(r.heap.at(0));
    r.expect_one("on_free", 0);
    r.prof->on_move(r.heap.at(0), r.heap.at(4096));
    r.prof->on_move_range(r.heap.at(0), r.heap.at(4096), 512);
    r.prof->on_free_range(r.heap.at(0), 512);
    REQUIRE(r.errors.size() == 4);
    CHECK(r.errors[1].hook == "on_move");
    CHECK(r.errors[2].hook == "on_move_range");
    CHECK(r.errors[3].hook == "on_free_range");
    // The refused events changed nothing: the object is still alive where it was.
    r.gc();
    CHECK(r.prof->stats().tracked_live == 1);
    CHECK(r.prof->stats().frees == 0);
  }
}

TEST_CASE("hook checks: frees and moves of addresses where no live object starts", "[core][protocol]") {
  SECTION("free of an address never allocated") {
    Rig r;
    r.alloc(0);
    r.gc([&] { r.prof->on_free(r.heap.at(256)); });
    r.expect_one("on_free", 256);
  }
  SECTION("free of an object's interior") {
    Rig r;
    r.alloc(0, 64);
    r.gc([&] { r.prof->on_free(r.heap.at(8)); });
    r.expect_one("on_free", 8);
  }
  SECTION("double free across GCs") {
    Rig r;
    r.alloc(0);
    r.gc([&] { r.prof->on_free(r.heap.at(0)); });
    CHECK(r.errors.empty());
    r.gc([&] { r.prof->on_free(r.heap.at(0)); });
    r.expect_one("on_free", 0);
  }
  SECTION("freed twice in one GC") {
    Rig r;
    r.alloc(0);
    r.gc([&] {
      r.prof->on_free(r.heap.at(0));
      r.prof->on_free(r.heap.at(0));
    });
    r.expect_one("on_free", 0);
  }
  SECTION("moved and freed in one GC") {
    Rig r;
    r.alloc(0);
    r.gc([&] {
      r.prof->on_free(r.heap.at(0));
      r.prof->on_move(r.heap.at(0), r.heap.at(512));
    });
    r.expect_one("on_move", 0);
  }
  SECTION("move of an unknown object") {
    Rig r;
    r.alloc(0);
    r.gc([&] { r.prof->on_move(r.heap.at(64), r.heap.at(512)); });
    r.expect_one("on_move", 64);
  }
  SECTION("an object allocated during the GC is freed by it") {
    Rig r;
    REQUIRE(r.prof->gc_begin(GcKind::kFull).ok());
    r.alloc(0);
    r.prof->on_free(r.heap.at(0));
    REQUIRE(r.prof->gc_end().ok());
    r.expect_one("on_free", 0);
  }
}

TEST_CASE("hook checks: moves onto memory still in use", "[core][protocol]") {
  SECTION("onto a survivor") {
    Rig r;
    r.alloc(0);
    r.alloc(128);
    r.gc([&] { r.prof->on_move(r.heap.at(0), r.heap.at(160)); });  // [160, 224) overlaps [128, 192)
    r.expect_one("on_move", 0);
  }
  SECTION("two objects onto one place") {
    Rig r;
    r.alloc(0);
    r.alloc(64);
    r.gc([&] {
      r.prof->on_move(r.heap.at(0), r.heap.at(1024));
      r.prof->on_move(r.heap.at(64), r.heap.at(1024));
    });
    REQUIRE(r.errors.size() == 1);
    CHECK(r.errors[0].hook == "on_move");
  }
  SECTION("outside every space") {
    Rig r;
    r.alloc(0);
    r.gc([&] { r.prof->on_move(r.heap.at(0), r.heap.space().end()); });
    r.expect_one("on_move", 0);
  }
  SECTION("a range that cuts an object in two") {
    Rig r;
    r.alloc(0, 128);
    r.gc([&] { r.prof->on_move_range(r.heap.at(0), r.heap.at(4096), 64); });
    r.expect_one("on_move_range", 0);
  }
}

TEST_CASE("hook checks: allocations over live memory or outside the spaces", "[core][protocol]") {
  SECTION("memory reused without a free (a lazy sweeper that forgot on_free)") {
    Rig r;
    r.alloc(0, 512);
    r.gc();
    r.alloc(256, 64);  // inside the live 512-byte object
    r.gc();
    r.expect_one("on_alloc", 256);
  }
  SECTION("two new objects overlap each other") {
    Rig r;
    r.alloc(0, 128);
    r.alloc(64, 64);
    r.gc();
    r.expect_one("on_alloc", 64);
  }
  SECTION("outside every space") {
    Rig r;
    r.prof->on_alloc(*r.thread, 1, 1, r.heap.space().end() + 64, 64);
    REQUIRE(r.errors.size() == 1);
    CHECK(r.errors[0].hook == "on_alloc");
    CHECK(r.prof->stats().objects_allocated == 0);  // refused, not recorded
  }
  SECTION("crossing the end of its space") {
    Rig r;
    r.alloc((1 << 16) - 32, 64);
    r.expect_one("on_alloc", (1 << 16) - 32);
  }
  SECTION("spaces added after the first allocation") {
    Rig r;
    r.alloc(0);
    FakeHeap other(4096);
    auto added = r.prof->add_space(other.space());
    REQUIRE_FALSE(added.ok());
    CHECK(added.error().code == ErrorCode::kProtocol);
    CHECK(added.error().message.find("add_space") != std::string::npos);
  }
}

TEST_CASE("hook checks: a ThreadState is used only by the OS thread that owns it", "[core][protocol]") {
  Rig r;
  r.alloc(0);  // the test's thread owns it now
  std::thread([&] { r.prof->on_alloc(*r.thread, 1, 1, r.heap.at(64), 64); }).join();
  REQUIRE(r.errors.size() == 1);
  CHECK(r.errors[0].hook == "on_alloc");
  CHECK(r.messages[0].find("does not own it") != std::string::npos);
  // Attached on one thread, used on another: the first user owns it.
  ThreadState* worker = *r.prof->attach_thread(2, "worker");
  std::thread([&] {
    r.prof->on_alloc(*worker, 1, 1, r.heap.at(128), 64);
    r.prof->detach_thread(*worker);
  }).join();
  CHECK(r.errors.size() == 1);
}

TEST_CASE("hook checks: without check_hooks the profiler keeps no shadow and reports only bracket misuse",
          "[core][protocol]") {
  Rig r(/*check=*/false);
  r.alloc(0, 512);
  r.gc();
  r.alloc(256, 64);  // would be an overlap under the checks
  r.gc([&] { r.prof->on_free(r.heap.at(2048)); });
  CHECK(r.errors.empty());
}

TEST_CASE("hook checks: addresses outside every space are refused even without check_hooks, and the trace stays "
          "readable",
          "[core][protocol]") {
  FakeHeap heap(1 << 16);
  auto sink = std::make_unique<MemorySink>();
  MemorySink* raw = sink.get();
  std::vector<std::string> errors;
  ProfilerOptions o;
  o.check_hooks = false;
  o.trace_sink = std::move(sink);
  o.default_leak_printer = false;
  o.on_protocol_error = [&](const ProtocolError& e) { errors.push_back(std::string(e.hook)); };
  auto prof = std::move(*Profiler::create(std::move(o)));
  REQUIRE(prof->add_space(heap.space()).ok());
  ThreadState* t = *prof->attach_thread(1, "main");
  const Address outside = heap.space().end() + 4096;
  prof->on_alloc(*t, 1, 1, heap.at(0), 64);
  prof->on_alloc(*t, 1, 1, outside, 64);
  prof->on_alloc(*t, 1, 1, heap.space().end() - 32, 64);  // crosses the end
  REQUIRE(prof->gc_begin(GcKind::kFull).ok());
  prof->on_free(outside);
  prof->on_move(heap.at(0), outside);
  prof->on_move_range(heap.at(0), heap.space().end() - 32, 64);
  prof->on_free_range(heap.space().end() - 32, 64);  // crosses the end
  REQUIRE(prof->gc_end().ok());
  REQUIRE(prof->finish().ok());
  CHECK(errors == std::vector<std::string>{"on_alloc", "on_alloc", "on_free", "on_move", "on_move_range", "on_free_range"});
  CHECK(prof->stats().objects_allocated == 1);
  auto c = trace::load(raw->data());
  REQUIRE(c.ok());  // nothing the reader would refuse reached the trace
  CHECK(c->allocs.size() == 1);
  CHECK(c->frees.empty());
  CHECK(c->moves.empty());
}

TEST_CASE("hook checks: free ranges", "[core][protocol]") {
  SECTION("a run of dead objects and the free memory after them") {
    Rig r;
    r.alloc(0);
    r.alloc(64);
    r.alloc(128, 512);  // tracked
    r.alloc(1024);      // survives
    r.gc([&] { r.prof->on_free_range(r.heap.at(0), 1024); });
    CHECK(r.errors.empty());
    CHECK(r.prof->stats().free_ranges == 1);
    CHECK(r.prof->stats().tracked_live == 0);  // the tracker saw the 512-byte object die
    r.alloc(0, 1024);  // the memory is free again: no overlap reported at the next GC
    r.gc([&] { r.prof->on_free_range(r.heap.at(0), 1088); });
    CHECK(r.errors.empty());
  }
  SECTION("a range that cuts a live object at its end") {
    Rig r;
    r.alloc(0);
    r.alloc(64, 128);
    r.gc([&] { r.prof->on_free_range(r.heap.at(0), 128); });  // [64, 192) reaches past 128
    r.expect_one("on_free_range", 0);
  }
  SECTION("a range that starts inside a live object") {
    Rig r;
    r.alloc(0, 128);
    r.gc([&] { r.prof->on_free_range(r.heap.at(64), 256); });
    r.expect_one("on_free_range", 64);
  }
  SECTION("an object freed by a range and by on_free") {
    Rig r;
    r.alloc(0);
    r.alloc(64);
    r.gc([&] {
      r.prof->on_free_range(r.heap.at(0), 128);
      r.prof->on_free(r.heap.at(64));
    });
    REQUIRE(r.errors.size() == 1);
  }
  SECTION("an empty range is nothing") {
    Rig r;
    r.alloc(0);
    r.gc([&] { r.prof->on_free_range(r.heap.at(0), 0); });
    CHECK(r.errors.empty());
    CHECK(r.prof->stats().free_ranges == 0);
  }
}

}  // namespace test_hook_protocol
