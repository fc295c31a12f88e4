// `objprof dump TRACE`: validates a trace and prints what it holds (counts per record kind,
// per epoch with --epochs, every record with --records). Truncated traces are read up to
// their last whole chunk with a warning; corrupt ones are refused with the reader's error.
#include "command.h"

#include <objprof/trace_reader.h>

#include <fmt/core.h>

#include <memory>

namespace objprof::cli {
namespace {

struct DumpOptions {
  std::string path;
  bool records = false;
};

class Printer final : public trace::Visitor {
 public:
  explicit Printer(bool records) : records_(records) {}
  void header(const trace::Header& h) override {
    fmt::print("header: granule {} bytes, {} space(s)\n", h.granule_bytes, h.spaces.size());
    for (const auto& s : h.spaces) fmt::print("  space {} '{}' [{:#x}, {:#x})\n", s.id, s.name, s.begin, s.end);
  }
  void type_def(const trace::TypeDef& t) override {
    ++types;
    if (records_) fmt::print("type {} '{}' size {}{}\n", t.id, t.name, t.instance_size, t.is_array ? " array" : "");
  }
  void site_def(const trace::SiteDef& s) override {
    ++sites;
    if (records_) fmt::print("site {} {} bci {} pc {:#x}\n", s.id, s.method, s.bytecode_offset, s.pc);
  }
  void thread_def(const trace::ThreadDef& t) override {
    ++threads;
    if (records_) fmt::print("thread {} '{}'\n", t.id, t.name);
  }
  void alloc(const trace::AllocEvent& a) override {
    ++allocs;
    bytes += a.size;
    if (records_) fmt::print("[{}] alloc t{} site {} type {} {:#x} {} bytes (clock {})\n", a.epoch, a.thread, a.site, a.type, a.addr, a.size, a.bytes_clock);
  }
  void move(const trace::MoveEvent& m) override {
    ++moves;
    if (records_) fmt::print("[{}] move {:#x} -> {:#x}{}\n", m.epoch, m.from, m.to, m.range ? fmt::format(" ({} bytes)", m.bytes) : "");
  }
  void free(const trace::FreeEvent& f) override {
    ++(f.range ? free_ranges : frees);
    if (records_ && f.range) fmt::print("[{}] free-range {:#x} ({} bytes)\n", f.epoch, f.addr, f.bytes);
    else if (records_) fmt::print("[{}] free {:#x}\n", f.epoch, f.addr);
  }
  void resize(const trace::ResizeEvent& r) override {
    ++resizes;
    if (records_) fmt::print("[{}] resize t{} {:#x} to {} bytes\n", r.epoch, r.thread, r.addr, r.bytes);
  }
  void gc_begin(const trace::GcEvent& g) override {
    ++gcs;
    if (records_) fmt::print("[{}] gc-begin {} at {} bytes\n", g.epoch, trace::gc_kind_name(g.kind), g.bytes_allocated);
  }
  void gc_end(const trace::GcEvent& g) override {
    if (records_) fmt::print("[{}] gc-end\n", g.epoch);
  }
  void bitmap_words(std::uint32_t space, std::uint64_t epoch, std::span<const std::pair<std::uint64_t, std::uint64_t>> w) override {
    std::uint64_t n = 0;
    for (auto [i, word] : w) n += static_cast<std::uint64_t>(__builtin_popcountll(word));
    marks += n;
    if (records_) fmt::print("[{}] bitmap space {}: {} marked granules in {} words\n", epoch, space, n, w.size());
  }
  void stale(const trace::StaleEvent& s) override {
    ++stale_reports;
    if (records_) fmt::print("[{}] stale {:#x} (last access epoch {})\n", s.epoch, s.addr, s.last_access_epoch);
  }
  void path(const trace::PathEvent& p) override {
    ++paths;
    if (!records_) return;
    if (p.status == PathStatus::kFound)
      fmt::print("[{}] path site {} type {} to {:#x}: {}\n", p.epoch, p.site, p.type, p.target, format_path(p.path));
    else
      fmt::print("[{}] path site {} type {} to {:#x}: none ({} after {} objects)\n", p.epoch, p.site, p.type, p.target,
                 path_status_name(p.status), p.objects_visited);
  }
  std::uint64_t types = 0, sites = 0, threads = 0, allocs = 0, bytes = 0, resizes = 0, moves = 0, frees = 0, free_ranges = 0, gcs = 0,
                marks = 0, stale_reports = 0, paths = 0;

 private:
  bool records_;
};

int run_dump(const DumpOptions& opt) {
  Printer p(opt.records);
  auto r = trace::read_file(opt.path, p);
  if (!r.ok()) {
    fmt::print(stderr, "objprof dump: error: {}\n", r.error().message);
    return 1;
  }
  fmt::print("{} chunks, {} records, {} bytes\n", r->chunks, r->records, r->bytes);
  fmt::print("{} types, {} sites, {} threads; {} allocs ({} bytes), {} resizes, {} moves, {} frees, {} free ranges, {} GCs, {} marked granules, {} stale reports, {} path searches\n",
             p.types, p.sites, p.threads, p.allocs, p.bytes, p.resizes, p.moves, p.frees, p.free_ranges, p.gcs, p.marks, p.stale_reports,
             p.paths);
  if (!r->warning.empty()) fmt::print(stderr, "objprof dump: warning: {}\n", r->warning);
  return 0;
}

const RegisterCommand kDump([](CLI::App& app) -> std::function<int()> {
  auto opt = std::make_shared<DumpOptions>();
  CLI::App* cmd = app.add_subcommand("dump", "Validate a trace and print what it holds");
  cmd->add_option("trace", opt->path, "trace file")->required();
  cmd->add_flag("--records", opt->records, "print every record");
  return [opt] { return run_dump(*opt); };
});

}  // namespace
}  // namespace objprof::cli
