// first_difference: where two analyses of one trace first disagree ("" when they agree in every
// object's chain, every GC record and every counter). No test framework: the Catch2 tests
// (same_analysis.h) and the workers' differential fuzz target share it.
#pragma once

#include <objprof/analysis/analyzer.h>

#include <cstddef>
#include <initializer_list>
#include <string>

namespace objprof::test {

// A field's name and whether the two sides differ in it.
struct FieldDifference {
  const char* name;
  bool differs;
};

// The name of the first field that differs, or null.
inline const char* first_differing(std::initializer_list<FieldDifference> fields) {
  for (const FieldDifference& f : fields)
    if (f.differs) return f.name;
  return nullptr;
}

inline std::string first_difference(const analysis::TraceAnalysis& x, const analysis::TraceAnalysis& y) {
  if (x.objects.size() != y.objects.size())
    return "object count: " + std::to_string(x.objects.size()) + " vs " + std::to_string(y.objects.size());
  for (analysis::ObjectId o = 0; o < x.objects.size(); ++o) {
    const analysis::Chain a = x.objects.chain(o), b = y.objects.chain(o);
    if (const char* field = first_differing({{"context", a.context != b.context},
                                             {"size", a.size != b.size},
                                             {"birth epoch", a.birth_epoch != b.birth_epoch},
                                             {"birth bytes", a.birth_bytes != b.birth_bytes},
                                             {"placements", !(a.placements == b.placements)},
                                             {"death epoch", a.death_epoch != b.death_epoch},
                                             {"flags", a.flags != b.flags},
                                             {"accessed epochs", !(a.accessed == b.accessed)},
                                             {"footprint", x.objects.footprint_of(o) != y.objects.footprint_of(o)}}))
      return std::string(field) + " of object " + std::to_string(o);
  }
  if (x.gcs.size() != y.gcs.size()) return "GC count: " + std::to_string(x.gcs.size()) + " vs " + std::to_string(y.gcs.size());
  for (std::size_t e = 0; e < x.gcs.size(); ++e) {
    const analysis::GcRecord &a = x.gcs[e], &b = y.gcs[e];
    if (const char* field = first_differing({{"epoch", a.epoch != b.epoch},
                                             {"kind", a.kind != b.kind},
                                             {"bytes at begin", a.bytes_begin != b.bytes_begin},
                                             {"bytes at end", a.bytes_end != b.bytes_end},
                                             {"ended", a.ended != b.ended},
                                             {"marked bits", a.marked_bits != b.marked_bits},
                                             {"freed objects", a.freed_objects != b.freed_objects},
                                             {"freed bytes", a.freed_bytes != b.freed_bytes},
                                             {"moved objects", a.moved_objects != b.moved_objects},
                                             {"live objects after", a.live_objects_after != b.live_objects_after},
                                             {"live bytes after", a.live_bytes_after != b.live_bytes_after}}))
      return std::string(field) + " of GC record " + std::to_string(e);
  }
  const analysis::AnalysisStats &s = x.stats, &t = y.stats;
  const char* field = first_differing({{"allocs", s.allocs != t.allocs},
                                       {"moves", s.moves != t.moves},
                                       {"move ranges", s.move_ranges != t.move_ranges},
                                       {"frees", s.frees != t.frees},
                                       {"marked bits", s.marked_bits != t.marked_bits},
                                       {"resolved bits", s.resolved_bits != t.resolved_bits},
                                       {"unresolved bits", s.unresolved_bits != t.unresolved_bits},
                                       {"unknown frees", s.unknown_frees != t.unknown_frees},
                                       {"unknown moves", s.unknown_moves != t.unknown_moves},
                                       {"unknown resizes", s.unknown_resizes != t.unknown_resizes},
                                       {"inferred deaths", s.inferred_deaths != t.inferred_deaths},
                                       {"allocs during GC", s.allocs_during_gc != t.allocs_during_gc},
                                       {"stale records", s.stale_records != t.stale_records},
                                       {"peak live objects", s.peak_live_objects != t.peak_live_objects},
                                       {"live objects", x.live_objects != y.live_objects},
                                       {"live bytes", x.live_bytes != y.live_bytes},
                                       {"total bytes", x.total_bytes != y.total_bytes},
                                       {"end epoch", x.end_epoch != y.end_epoch},
                                       {"complete", x.complete != y.complete},
                                       {"truncated", x.truncated != y.truncated},
                                       {"warnings", x.warnings != y.warnings},
                                       {"context count", x.contexts.size() != y.contexts.size()}});
  return field ? std::string("analysis ") + field : std::string();
}

}  // namespace objprof::test
