// first_difference: where two analyses of one trace first disagree ("" when they agree in every
// object's chain, every GC record and every counter). No test framework: the Catch2 tests
// (same_analysis.h) and the workers' differential fuzz target share it.
#pragma once

#include <objprof/analysis/analyzer.h>

#include <cstddef>
#include <string>

namespace objprof::test {

inline std::string first_difference(const analysis::TraceAnalysis& x, const analysis::TraceAnalysis& y) {
  if (x.objects.size() != y.objects.size())
    return "object count: " + std::to_string(x.objects.size()) + " vs " + std::to_string(y.objects.size());
  for (analysis::ObjectId o = 0; o < x.objects.size(); ++o) {
    const analysis::Chain a = x.objects.chain(o), b = y.objects.chain(o);
    const char* field = a.context != b.context             ? "context"
                        : a.size != b.size                 ? "size"
                        : a.birth_epoch != b.birth_epoch   ? "birth epoch"
                        : a.birth_bytes != b.birth_bytes   ? "birth bytes"
                        : !(a.placements == b.placements)  ? "placements"
                        : a.death_epoch != b.death_epoch   ? "death epoch"
                        : a.flags != b.flags               ? "flags"
                        : !(a.accessed == b.accessed)      ? "accessed epochs"
                        : x.objects.footprint_of(o) != y.objects.footprint_of(o) ? "footprint"
                                                                                 : nullptr;
    if (field) return std::string(field) + " of object " + std::to_string(o);
  }
  if (x.gcs.size() != y.gcs.size()) return "GC count: " + std::to_string(x.gcs.size()) + " vs " + std::to_string(y.gcs.size());
  for (std::size_t e = 0; e < x.gcs.size(); ++e) {
    const analysis::GcRecord &a = x.gcs[e], &b = y.gcs[e];
    const char* field = a.epoch != b.epoch                           ? "epoch"
                        : a.kind != b.kind                           ? "kind"
                        : a.bytes_begin != b.bytes_begin             ? "bytes at begin"
                        : a.bytes_end != b.bytes_end                 ? "bytes at end"
                        : a.ended != b.ended                         ? "ended"
                        : a.marked_bits != b.marked_bits             ? "marked bits"
                        : a.freed_objects != b.freed_objects         ? "freed objects"
                        : a.freed_bytes != b.freed_bytes             ? "freed bytes"
                        : a.moved_objects != b.moved_objects         ? "moved objects"
                        : a.live_objects_after != b.live_objects_after ? "live objects after"
                        : a.live_bytes_after != b.live_bytes_after   ? "live bytes after"
                                                                     : nullptr;
    if (field) return std::string(field) + " of GC record " + std::to_string(e);
  }
  const analysis::AnalysisStats &s = x.stats, &t = y.stats;
  const char* field = s.allocs != t.allocs                         ? "allocs"
                      : s.moves != t.moves                         ? "moves"
                      : s.move_ranges != t.move_ranges             ? "move ranges"
                      : s.frees != t.frees                         ? "frees"
                      : s.marked_bits != t.marked_bits             ? "marked bits"
                      : s.resolved_bits != t.resolved_bits         ? "resolved bits"
                      : s.unresolved_bits != t.unresolved_bits     ? "unresolved bits"
                      : s.unknown_frees != t.unknown_frees         ? "unknown frees"
                      : s.unknown_moves != t.unknown_moves         ? "unknown moves"
                      : s.unknown_resizes != t.unknown_resizes     ? "unknown resizes"
                      : s.inferred_deaths != t.inferred_deaths     ? "inferred deaths"
                      : s.allocs_during_gc != t.allocs_during_gc   ? "allocs during GC"
                      : s.stale_records != t.stale_records         ? "stale records"
                      : s.peak_live_objects != t.peak_live_objects ? "peak live objects"
                      : x.live_objects != y.live_objects           ? "live objects"
                      : x.live_bytes != y.live_bytes               ? "live bytes"
                      : x.total_bytes != y.total_bytes             ? "total bytes"
                      : x.end_epoch != y.end_epoch                 ? "end epoch"
                      : x.complete != y.complete                   ? "complete"
                      : x.truncated != y.truncated                 ? "truncated"
                      : x.warnings != y.warnings                   ? "warnings"
                      : x.contexts.size() != y.contexts.size()     ? "context count"
                                                                   : nullptr;
  return field ? std::string("analysis ") + field : std::string();
}

}  // namespace objprof::test
