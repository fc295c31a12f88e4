#include "chain_format.h"

#include "fmt_format.h"

#include <iterator>

namespace objprof::analysis::internal {

std::string runs_text(const std::vector<EpochRun>& runs) {
  if (runs.empty()) return "never";
  std::string out;
  for (const EpochRun& r : runs) {
    if (!out.empty()) out += ',';
    if (r.first == r.last) fmt::format_to(std::back_inserter(out), "{}", r.first);
    else fmt::format_to(std::back_inserter(out), "{}-{}", r.first, r.last);
  }
  return out;
}

std::string chain_text(const TraceAnalysis& a, const Chain& c, std::size_t max_placements) {
  std::string out = fmt::format("<({}, {})", site_label(a.sites[a.contexts[c.context].site]),
                                c.alive() ? std::string("alive") : fmt::format("{}", c.death_epoch));
  const std::size_t n = c.placements.size();
  for (std::size_t i = 0; i < n; ++i) {
    // Long chains (an object copied by every GC) keep their ends: where it was born and where it is.
    if (n > max_placements && i == max_placements / 2) {
      const std::size_t skip = n - max_placements + 1;
      fmt::format_to(std::back_inserter(out), ", ...{} more...", skip);
      i += skip - 1;
      continue;
    }
    fmt::format_to(std::back_inserter(out), ", ({}, {:#x})", c.placements[i].epoch, c.placements[i].addr);
  }
  out += ">";
  fmt::format_to(std::back_inserter(out), " accessed: {}", runs_text(c.accessed));
  return out;
}

void chain_json(JsonWriter& j, const TraceAnalysis& a, const Chain& c, const ObjectMetrics& m) {
  const AllocContext& ctx = a.contexts[c.context];
  j.begin_object();
  j.field("id", c.id);
  j.field("site", site_label(a.sites[ctx.site]));
  j.field("site_id", a.sites[ctx.site].id);
  j.field("type", a.types[ctx.type].defined ? a.types[ctx.type].name : fmt::format("type#{}", a.types[ctx.type].id));
  j.field("thread", a.threads[ctx.thread].id);
  j.field("size", c.size);
  j.field("birth_epoch", c.birth_epoch);
  j.field("birth_bytes", c.birth_bytes);
  j.key("placements").begin_array();
  for (const Placement& p : c.placements) {
    j.begin_object();
    j.field("epoch", p.epoch);
    j.field("addr", fmt::format("{:#x}", p.addr));
    j.end_object();
  }
  j.end_array();
  j.field("alive", c.alive());
  j.key("death_epoch");
  if (c.alive()) j.null();
  else j.value(c.death_epoch);
  j.field("death_inferred", (c.flags & kDeathInferred) != 0);
  j.field("reported_online", (c.flags & kReportedStale) != 0);
  j.key("accessed").begin_array();
  for (const EpochRun& r : c.accessed) {
    j.begin_array();
    j.value(r.first);
    j.value(r.last);
    j.end_array();
  }
  j.end_array();
  j.field("lifetime_gcs", m.lifetime_gcs);
  j.field("lifetime_bytes", m.lifetime_bytes);
  j.field("last_use_epoch", m.last_use_epoch);
  j.field("idle_epochs", m.idle_epochs);
  j.field("idle_bytes", m.idle_bytes);
  j.end_object();
}

void gc_fields_json(JsonWriter& j, const GcRecord& g) {
  j.field("epoch", g.epoch);
  j.field("kind", trace::gc_kind_name(g.kind));
  j.field("bytes_begin", g.bytes_begin);
  j.field("ended", g.ended);
  j.field("marked_bits", g.marked_bits);
  j.field("freed_objects", g.freed_objects);
  j.field("freed_bytes", g.freed_bytes);
  j.field("moved_objects", g.moved_objects);
  j.field("live_objects_after", g.live_objects_after);
  j.field("live_bytes_after", g.live_bytes_after);
}

}  // namespace objprof::analysis::internal
