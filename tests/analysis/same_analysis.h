// require_same: two analyses of one trace agree in every object's chain, every GC record and
// every counter. The differential tests of the analyzer's threads use it (one worker's result
// is the reference).
#pragma once

#include <objprof/analysis/analyzer.h>

#include <catch2/catch.hpp>

namespace objprof::test {

inline void require_same(const analysis::TraceAnalysis& x, const analysis::TraceAnalysis& y) {
  REQUIRE(x.objects.size() == y.objects.size());
  for (analysis::ObjectId o = 0; o < x.objects.size(); ++o) {
    INFO("object " << o);
    const analysis::Chain a = x.objects.chain(o), b = y.objects.chain(o);
    REQUIRE(a.context == b.context);
    REQUIRE(a.size == b.size);
    REQUIRE(a.birth_epoch == b.birth_epoch);
    REQUIRE(a.birth_bytes == b.birth_bytes);
    REQUIRE(a.placements == b.placements);
    REQUIRE(a.death_epoch == b.death_epoch);
    REQUIRE(static_cast<int>(a.flags) == static_cast<int>(b.flags));
    REQUIRE(a.accessed == b.accessed);
    REQUIRE(x.objects.footprint_of(o) == y.objects.footprint_of(o));
  }
  REQUIRE(x.gcs.size() == y.gcs.size());
  for (std::size_t e = 0; e < x.gcs.size(); ++e) {
    INFO("gc " << e);
    const analysis::GcRecord &a = x.gcs[e], &b = y.gcs[e];
    CHECK(a.epoch == b.epoch);
    CHECK(a.kind == b.kind);
    CHECK(a.bytes_begin == b.bytes_begin);
    CHECK(a.bytes_end == b.bytes_end);
    CHECK(a.ended == b.ended);
    CHECK(a.marked_bits == b.marked_bits);
    CHECK(a.freed_objects == b.freed_objects);
    CHECK(a.freed_bytes == b.freed_bytes);
    CHECK(a.moved_objects == b.moved_objects);
    CHECK(a.live_objects_after == b.live_objects_after);
    CHECK(a.live_bytes_after == b.live_bytes_after);
  }
  const analysis::AnalysisStats &s = x.stats, &t = y.stats;
  CHECK(s.allocs == t.allocs);
  CHECK(s.moves == t.moves);
  CHECK(s.move_ranges == t.move_ranges);
  CHECK(s.frees == t.frees);
  CHECK(s.marked_bits == t.marked_bits);
  CHECK(s.resolved_bits == t.resolved_bits);
  CHECK(s.unresolved_bits == t.unresolved_bits);
  CHECK(s.unknown_frees == t.unknown_frees);
  CHECK(s.unknown_moves == t.unknown_moves);
  CHECK(s.unknown_resizes == t.unknown_resizes);
  CHECK(s.inferred_deaths == t.inferred_deaths);
  CHECK(s.allocs_during_gc == t.allocs_during_gc);
  CHECK(s.stale_records == t.stale_records);
  CHECK(s.peak_live_objects == t.peak_live_objects);
  CHECK(x.live_objects == y.live_objects);
  CHECK(x.live_bytes == y.live_bytes);
  CHECK(x.total_bytes == y.total_bytes);
  CHECK(x.end_epoch == y.end_epoch);
  CHECK(x.complete == y.complete);
  CHECK(x.truncated == y.truncated);
  CHECK(x.warnings == y.warnings);
  CHECK(x.contexts.size() == y.contexts.size());
}

}  // namespace objprof::test
