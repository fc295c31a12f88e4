// The tracked objects' fates from the collector's answers (FateReports, report_survivors,
// survivor_oracle.h): which GCs want the hooks' reports, what the answers do to the tracked
// objects, and every misuse of the call reported as a ProtocolError that names it.
#include <objprof/fate_reports.h>
#include <objprof/profiler.h>
#include <objprof/survivor_oracle.h>

#include "test_support.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace test_survivors {

using namespace objprof;
using objprof::test::ProfilerRig;

namespace {

// Answers from a table: an address not in it died.
struct Answers final : SurvivorOracle {
  std::map<Address, Address> fate;
  mutable std::vector<Address> asked;
  mutable std::vector<std::size_t> batches;  // each call's number of addresses
  void survivors(std::span<const Address> pre_gc, std::span<Address> post_gc) const noexcept override {
    batches.push_back(pre_gc.size());
    if (post_gc.size() != pre_gc.size()) batches.push_back(0);  // a mismatch shows as an empty batch
    for (std::size_t i = 0; i < pre_gc.size(); ++i) {
      asked.push_back(pre_gc[i]);
      const auto it = fate.find(pre_gc[i]);
      post_gc[i] = it == fate.end() ? 0 : it->second;
    }
  }
};

// A profiler whose fates come from the answers (hook checks off: they would want the hooks),
// GC_K = 2, objects of 1 KiB and more tracked, its protocol errors collected.
struct Rig : ProfilerRig {
  explicit Rig(FateReports fates = FateReports::kSurvivors, bool trace = false, std::size_t heap_bytes = 1 << 16)
      : ProfilerRig(heap_bytes, [&](ProfilerOptions& o) {
          o.check_hooks = false;
          o.fate_reports = fates;
          if (!trace) {
            o.trace_sink.reset();
            sink = nullptr;  // no trace to analyze
          }
        }) {
    REQUIRE(prof->define_type({1, "Obj", 0, false}).ok());
    REQUIRE(prof->define_site({1, 0, "site", 0}).ok());
  }
  void alloc(std::size_t off, std::uint64_t size = 1024) { prof->on_alloc(*thread, 1, 1, heap.at(off), size); }
  std::vector<Address> leaked() const {
    std::vector<Address> out;
    for (const LeakReport& r : prof->possible_leaks()) out.push_back(r.addr);
    std::sort(out.begin(), out.end());
    return out;
  }
};

}  // namespace

TEST_CASE("survivors: the answers kill, keep and move tracked objects, and no hook is needed", "[core][profiler]") {
  Rig r;
  r.alloc(0);
  r.alloc(2048);
  r.alloc(4096);
  r.alloc(8192, 64);  // untracked: never asked about
  Answers answers;
  answers.fate = {{r.at(2048), r.at(2048)}, {r.at(4096), r.at(16384)}};  // the first dies, the third moves
  REQUIRE(r.prof->gc_begin(GcKind::kCopying).ok());
  CHECK_FALSE(r.prof->wants_object_events());
  r.prof->report_survivors(answers);
  REQUIRE(r.prof->gc_end().ok());
  std::sort(answers.asked.begin(), answers.asked.end());
  CHECK(answers.asked == std::vector<Address>{r.at(0), r.at(2048), r.at(4096)});
  CHECK(r.prof->stats().tracked_live == 2);
  // Two more GCs without an access: the two survivors are stale, the moved one at its new place.
  answers.fate = {{r.at(2048), r.at(2048)}, {r.at(16384), r.at(16384)}};
  for (int i = 0; i < 2; ++i) {
    answers.asked.clear();
    REQUIRE(r.prof->gc_begin(GcKind::kFull).ok());
    r.prof->report_survivors(answers);
    REQUIRE(r.prof->gc_end().ok());
    std::sort(answers.asked.begin(), answers.asked.end());
    CHECK(answers.asked == std::vector<Address>{r.at(2048), r.at(16384)});
  }
  CHECK(r.leaked() == std::vector<Address>{r.at(2048), r.at(16384)});
  const ProfilerStats s = r.prof->stats();
  CHECK(s.survivor_gcs == 3);
  CHECK(s.moves + s.frees + s.free_ranges == 0);
  CHECK(r.messages.empty());
}

TEST_CASE("survivors: more tracked objects than one batch are asked about in batches, each once", "[core][profiler]") {
  // Two full batches and a part: the profiler's scratch stays one batch, and no record is asked
  // about twice or skipped at a batch's edge.
  constexpr std::size_t kObjects = 2 * kSurvivorBatch + 100, kObject = 1024;
  Rig r(FateReports::kSurvivors, false, 2 * kObjects * kObject);
  Answers answers;
  std::vector<Address> survivors;  // where the survivors are after the GC
  for (std::size_t i = 0; i < kObjects; ++i) {
    r.alloc(i * kObject, kObject);
    const Address a = r.at(i * kObject);
    if (i % 3 == 0) continue;  // dies
    const Address to = i % 3 == 1 ? a : r.at((kObjects + i) * kObject);  // stays, or moves up
    answers.fate[a] = to;
    survivors.push_back(to);
  }
  REQUIRE(r.prof->gc_begin(GcKind::kCopying).ok());
  r.prof->report_survivors(answers);
  REQUIRE(r.prof->gc_end().ok());
  CHECK(answers.batches == std::vector<std::size_t>{kSurvivorBatch, kSurvivorBatch, 100});
  std::vector<Address> asked = answers.asked;
  std::sort(asked.begin(), asked.end());
  CHECK(std::adjacent_find(asked.begin(), asked.end()) == asked.end());
  REQUIRE(asked.size() == kObjects);
  CHECK(asked.front() == r.at(0));
  CHECK(asked.back() == r.at((kObjects - 1) * kObject));
  CHECK(r.prof->stats().tracked_live == survivors.size());
  // The next GC asks about the survivors alone, at their new places; two more GCs without an
  // access make every one of them stale there.
  answers.fate.clear();
  for (Address a : survivors) answers.fate[a] = a;
  std::sort(survivors.begin(), survivors.end());
  for (int gc = 0; gc < 2; ++gc) {
    answers.asked.clear();
    answers.batches.clear();
    REQUIRE(r.prof->gc_begin(GcKind::kFull).ok());
    r.prof->report_survivors(answers);
    REQUIRE(r.prof->gc_end().ok());
    std::sort(answers.asked.begin(), answers.asked.end());
    CHECK(answers.asked == survivors);
    CHECK(answers.batches.size() == (survivors.size() + kSurvivorBatch - 1) / kSurvivorBatch);
  }
  CHECK(r.leaked() == survivors);
  CHECK(r.messages.empty());
}

TEST_CASE("survivors: an object accessed at its old place before a move keeps that access", "[core][profiler]") {
  Rig r;
  r.alloc(0);
  Answers answers;
  answers.fate = {{r.at(0), r.at(4096)}};
  for (int gc = 0; gc < 4; ++gc) {
    // Accessed in every epoch, at the address it has in that epoch: never stale.
    r.touch(gc == 0 ? 0 : 4096);
    REQUIRE(r.prof->gc_begin(GcKind::kCopying).ok());
    r.prof->report_survivors(answers);
    REQUIRE(r.prof->gc_end().ok());
    answers.fate = {{r.at(4096), r.at(4096)}};
  }
  CHECK(r.leaked().empty());
  CHECK(r.messages.empty());
}

TEST_CASE("survivors: which GCs want each move and free reported", "[core][profiler]") {
  SECTION("the hooks: always") {
    Rig r(FateReports::kHooks);
    REQUIRE(r.prof->gc_begin(GcKind::kFull).ok());
    CHECK(r.prof->wants_object_events());
    REQUIRE(r.prof->gc_end().ok());
  }
  SECTION("a trace records every move and death: always") {
    for (FateReports f : {FateReports::kSurvivors, FateReports::kCheaper}) {
      Rig r(f, /*trace=*/true);
      r.alloc(0);
      REQUIRE(r.prof->gc_begin(GcKind::kFull).ok());
      CHECK(r.prof->wants_object_events());
      Answers none;  // the answers are not asked for: this GC takes the hooks' reports
      r.prof->report_survivors(none);
      CHECK(none.asked.empty());
      r.prof->on_free(r.at(0));
      REQUIRE(r.prof->gc_end().ok());
      CHECK(r.prof->stats().tracked_live == 0);
      CHECK(r.prof->stats().survivor_gcs == 0);
      CHECK(r.messages.empty());
    }
  }
  SECTION("whichever is cheaper: the answers while the tracked objects are few beside the allocations") {
    Rig r(FateReports::kCheaper);
    r.alloc(0);
    for (std::size_t i = 0; i < 3; ++i) r.alloc(1024 + 16 * i, 16);  // 4 allocations, 1 tracked
    REQUIRE(r.prof->gc_begin(GcKind::kFull).ok());
    CHECK_FALSE(r.prof->wants_object_events());
    Answers answers;
    answers.fate = {{r.at(0), r.at(0)}};
    r.prof->report_survivors(answers);
    REQUIRE(r.prof->gc_end().ok());
    CHECK(answers.asked == std::vector<Address>{r.at(0)});
    r.alloc(2048);  // 1 allocation, now 2 tracked: the hooks
    REQUIRE(r.prof->gc_begin(GcKind::kFull).ok());
    CHECK(r.prof->wants_object_events());
    r.prof->on_free(r.at(0));
    REQUIRE(r.prof->gc_end().ok());
    CHECK(r.prof->stats().tracked_live == 1);
    CHECK(r.prof->stats().survivor_gcs == 1);
    CHECK(r.messages.empty());
  }
}

TEST_CASE("fate reports: each name spells one mode, and nothing else is read as one", "[core][profiler]") {
  for (FateReports f : {FateReports::kHooks, FateReports::kSurvivors, FateReports::kCheaper}) {
    const std::string_view name = fate_reports_name(f);
    CAPTURE(name);
    REQUIRE(fate_reports_from_name(name) == f);
    // The choices an error quotes list every name.
    CHECK(kFateReportsChoices.find(name) != std::string_view::npos);
  }
  CHECK(fate_reports_name(FateReports::kHooks) != fate_reports_name(FateReports::kCheaper));
  for (std::string_view bad : {"", "hook", "Hooks", "cheaper ", "survivors,", "?"}) {
    CAPTURE(bad);
    CHECK_FALSE(fate_reports_from_name(bad).has_value());
  }
}

TEST_CASE("survivors: every misuse of report_survivors is a protocol error naming it", "[core][profiler]") {
  Answers answers;
  SECTION("with the hooks' fates") {
    Rig r(FateReports::kHooks);
    REQUIRE(r.prof->gc_begin(GcKind::kFull).ok());
    r.prof->report_survivors(answers);
    REQUIRE(r.prof->gc_end().ok());
    REQUIRE(r.messages.size() == 1);
    CHECK(r.messages[0].find("report_survivors") != std::string::npos);
    CHECK(r.messages[0].find("kHooks") != std::string::npos);
  }
  SECTION("outside a GC bracket") {
    Rig r;
    r.prof->report_survivors(answers);
    REQUIRE(r.messages.size() == 1);
    CHECK(r.messages[0].find("outside gc_begin/gc_end") != std::string::npos);
  }
  SECTION("twice in one GC: the second asks nothing") {
    Rig r;
    r.alloc(0);
    answers.fate = {{r.at(0), r.at(0)}};
    REQUIRE(r.prof->gc_begin(GcKind::kFull).ok());
    r.prof->report_survivors(answers);
    Answers second;  // says everything died
    r.prof->report_survivors(second);
    REQUIRE(r.prof->gc_end().ok());
    CHECK(second.asked.empty());
    CHECK(r.prof->stats().tracked_live == 1);
    REQUIRE(r.messages.size() == 1);
    CHECK(r.messages[0].find("twice") != std::string::npos);
  }
  SECTION("a GC that needed the answers and never asked: the objects keep their places") {
    Rig r;
    r.alloc(0);
    REQUIRE(r.prof->gc_begin(GcKind::kFull).ok());
    REQUIRE(r.prof->gc_end().ok());
    CHECK(r.prof->stats().tracked_live == 1);
    REQUIRE(r.messages.size() == 1);
    CHECK(r.messages[0].find("gc_end") != std::string::npos);
    CHECK(r.messages[0].find("report_survivors") != std::string::npos);
  }
  SECTION("a survivor outside every space: it keeps its place") {
    Rig r;
    r.alloc(0);
    answers.fate = {{r.at(0), r.at(0) + (1 << 20)}};
    REQUIRE(r.prof->gc_begin(GcKind::kCopying).ok());
    r.prof->report_survivors(answers);
    REQUIRE(r.prof->gc_end().ok());
    REQUIRE(r.messages.size() == 1);
    CHECK(r.messages[0].find("outside every registered space") != std::string::npos);
    // Still tracked where it was: asked about at that address next time.
    answers.fate = {{r.at(0), r.at(0)}};
    answers.asked.clear();
    REQUIRE(r.prof->gc_begin(GcKind::kFull).ok());
    r.prof->report_survivors(answers);
    REQUIRE(r.prof->gc_end().ok());
    CHECK(answers.asked == std::vector<Address>{r.at(0)});
  }
}

}  // namespace test_survivors
