#include "objprof/analysis/report_csv.h"

#include "chain_format.h"
#include "fmt_format.h"

#include <cerrno>
#include <cstring>
#include <iterator>

namespace objprof::analysis {

namespace {

const char* const kNames[] = {"leaks", "sites", "types", "threads", "survival", "cohorts", "sizes", "gcs", "diff", "objects"};

std::string field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace

Result<CsvTable> parse_csv_table(const std::string& name) {
  for (std::size_t i = 0; i < std::size(kNames); ++i)
    if (name == kNames[i]) return static_cast<CsvTable>(i);
  std::string all;
  for (const char* n : kNames) all += all.empty() ? n : std::string(", ") + n;
  return make_error(ErrorCode::kInvalidArgument, fmt::format("unknown CSV table '{}' (one of: {})", name, all));
}

const char* csv_table_name(CsvTable t) noexcept { return kNames[static_cast<std::size_t>(t)]; }

Result<std::string> render_csv(const Report& r, CsvTable table) {
  const TraceAnalysis& a = *r.analysis;
  std::string out;
  // Rows are composed whole (numbers and quoted names) and written as raw lines.
  struct Raw {
    std::string& out;
    void line(const std::string& s) { out += s + "\r\n"; }
  } raw{out};
  switch (table) {
    case CsvTable::kLeaks:
      raw.line("rank,site,site_id,objects,bytes,score,max_idle_epochs,reported_online,oldest_object,oldest_chain");
      for (std::size_t i = 0; i < r.leaks.sites.size(); ++i) {
        const LeakSite& s = r.leaks.sites[i];
        raw.line(fmt::format("{},{},{},{},{},{},{},{},{},{}", i + 1, field(site_label(a.sites[s.site])), a.sites[s.site].id, s.objects,
                             s.bytes, s.score, s.max_idle_epochs, s.reported_online, s.oldest,
                             field(internal::chain_text(a, s.oldest_chain, SIZE_MAX))));
      }
      break;
    case CsvTable::kSites:
    case CsvTable::kTypes:
    case CsvTable::kThreads: {
      const GroupTable& g = table == CsvTable::kSites ? r.sites : table == CsvTable::kTypes ? r.types : r.threads;
      std::string head = fmt::format("{},id,allocated_objects,allocated_bytes,live_objects,live_bytes,dead_objects,mean_lifetime_gcs,mean_lifetime_bytes",
                                     group_by_name(g.by));
      for (const std::string& l : r.options.buckets.labels()) head += "," + field("lifetime " + l);
      raw.line(head);
      for (const GroupRow& row : g.rows) {
        std::string line = fmt::format("{},{},{},{},{},{},{},{},{}", field(row.name), row.id, row.allocated_objects, row.allocated_bytes,
                                       row.live_objects, row.live_bytes, row.dead_objects, row.mean_lifetime_gcs, row.mean_lifetime_bytes);
        for (std::uint64_t n : row.lifetime_buckets) line += fmt::format(",{}", n);
        raw.line(line);
      }
      break;
    }
    case CsvTable::kSurvival: {
      std::string head = "site,objects,bytes";
      for (std::uint32_t n : r.survival.thresholds) head += fmt::format(",survived_{}", n);
      head += ",pretenure";
      raw.line(head);
      for (const SurvivalRow& s : r.survival.rows) {
        std::string line = fmt::format("{},{},{}", field(site_label(a.sites[s.site])), s.objects, s.bytes);
        for (std::size_t k = 0; k < s.eligible.size(); ++k) line += s.eligible[k] ? fmt::format(",{}", s.rate(k)) : std::string(",");
        line += s.pretenure ? ",yes" : ",no";
        raw.line(line);
      }
      break;
    }
    case CsvTable::kCohorts: {
      raw.line("cohort,start_bytes,sample_epoch,sample_bytes,live_objects,live_bytes,mean_lifetime_bytes_so_far");
      const Timeline& t = r.cohorts.timeline;
      for (const Cohort& c : r.cohorts.cohorts)
        for (std::size_t s = 0; s < t.size(); ++s)
          raw.line(fmt::format("{},{},{},{},{},{},{}", c.index, c.start_bytes, t.epochs[s], t.clocks[s], c.live_objects[s], c.live_bytes[s],
                               c.mean_lifetime_bytes_so_far[s]));
      break;
    }
    case CsvTable::kSizes:
      raw.line("min_size,max_size,allocated_objects,allocated_bytes,live_objects,live_bytes");
      for (const SizeBin& b : r.sizes.bins)
        raw.line(fmt::format("{},{},{},{},{},{}", b.min, b.max, b.allocated_objects, b.allocated_bytes, b.live_objects, b.live_bytes));
      break;
    case CsvTable::kGcs:
      raw.line("epoch,kind,bytes_begin,marked_bits,freed_objects,freed_bytes,moved_objects,live_objects_after,live_bytes_after");
      for (const GcRecord& g : a.gcs)
        raw.line(fmt::format("{},{},{},{},{},{},{},{},{}", g.epoch, trace::gc_kind_name(g.kind), g.bytes_begin, g.marked_bits, g.freed_objects,
                             g.freed_bytes, g.moved_objects, g.live_objects_after, g.live_bytes_after));
      break;
    case CsvTable::kDiff:
      if (!r.diff) return make_error(ErrorCode::kInvalidArgument, "the diff table needs --diff=A:B");
      raw.line("site,kept_objects,kept_bytes,died_objects,died_bytes,born_objects,born_bytes,net_bytes");
      for (const HeapDiffRow& d : r.diff->rows)
        raw.line(fmt::format("{},{},{},{},{},{},{},{}", field(site_label(a.sites[d.site])), d.kept.objects, d.kept.bytes, d.died.objects,
                             d.died.bytes, d.born.objects, d.born.bytes, d.net_bytes()));
      break;
    case CsvTable::kObjects:
      return make_error(ErrorCode::kInvalidArgument, "the objects table is streamed with write_objects_csv");
  }
  return out;
}

Status write_objects_csv(const TraceAnalysis& a, const ObjectFilter& filter, std::FILE* f) {
  std::string buf =
      "id,site,type,thread,size,birth_epoch,birth_bytes,death_epoch,lifetime_gcs,lifetime_bytes,last_use_epoch,idle_epochs,"
      "access_epochs,accessed,placements\r\n";
  auto flush = [&]() -> Status {
    if (!buf.empty() && std::fwrite(buf.data(), 1, buf.size(), f) != buf.size())
      return make_error(ErrorCode::kIo, fmt::format("writing CSV: {}", std::strerror(errno)));
    buf.clear();
    return {};
  };
  for (ObjectId o = 0; o < a.objects.size(); ++o) {
    const ObjectMetrics m = object_metrics(a, o);
    if (!filter.keep(m)) continue;
    const AllocContext& ctx = a.contexts[a.objects.context(o)];
    std::string placements;
    for (const Placement& p : a.objects.placements(o))
      fmt::format_to(std::back_inserter(placements), "{}{}@{:#x}", placements.empty() ? "" : ";", p.epoch, p.addr);
    const Type& t = a.types[ctx.type];
    fmt::format_to(std::back_inserter(buf), "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\r\n", o, field(site_label(a.sites[ctx.site])),
                   field(t.defined ? t.name : fmt::format("type#{}", t.id)), a.threads[ctx.thread].id, a.objects.size_of(o),
                   a.objects.birth_epoch(o), a.objects.birth_bytes(o), m.alive ? std::string() : fmt::format("{}", a.objects.death_epoch(o)),
                   m.lifetime_gcs, m.lifetime_bytes, m.last_use_epoch, m.idle_epochs, a.objects.access_count(o),
                   internal::runs_text(a.objects.accessed(o)), placements);
    if (buf.size() > (1 << 20)) OBJPROF_RETURN_IF_ERROR(flush());
  }
  OBJPROF_RETURN_IF_ERROR(flush());
  return {};
}

}  // namespace objprof::analysis
