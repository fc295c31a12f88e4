// objprof shm: inspect, copy out and remove objprof shared-memory segments
// (docs/shared-memory.md).
//   objprof shm info NAME               layout, writer state, ring counters, bitmap summary
//   objprof shm dump NAME --out=FILE    the committed trace bytes, as a trace file
//   objprof shm remove NAME             removes /dev/shm/NAME (segments are never removed
//                                       implicitly)
#include "command.h"

#include "objprof/shared_segment.h"
#include "objprof/trace_reader.h"

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

namespace objprof::cli {
namespace {

struct ShmArgs {
  std::string name;
  std::string out;
  CLI::App* info = nullptr;
  CLI::App* dump = nullptr;
  CLI::App* remove = nullptr;
};

int fail(const char* what, const Error& e) {
  std::fprintf(stderr, "objprof shm %s: error: %s\n", what, e.message.c_str());
  return 1;
}

int run_info(const ShmArgs& a) {
  auto view = SharedSegment::attach(a.name);
  if (!view.ok()) return fail("info", view.error());
  std::fputs(format_segment_info((*view)->info()).c_str(), stdout);
  return 0;
}

int run_dump(const ShmArgs& a) {
  auto view = SharedSegment::attach(a.name);
  if (!view.ok()) return fail("dump", view.error());
  auto copy = (*view)->copy_trace();
  if (!copy.ok()) return fail("dump", copy.error());
  {
    std::ofstream f(a.out, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(copy->bytes.data()), static_cast<std::streamsize>(copy->bytes.size()));
    f.close();
    if (!f) return fail("dump", make_error(ErrorCode::kIo, "cannot write '" + a.out + "'"));
  }
  std::printf("wrote %zu bytes of trace from segment '%s' to %s\n", copy->bytes.size(), (*view)->name().c_str(),
              a.out.c_str());
  if (!copy->from_start)
    std::printf("note: a consumer drained the first %llu bytes; this file holds the rest of the trace\n",
                static_cast<unsigned long long>(copy->begin));
  if (copy->chunks_lost)
    std::printf("warning: %llu chunks were refused by a full ring (see the ring-full policy)\n",
                static_cast<unsigned long long>(copy->chunks_lost));
  trace::Visitor ignore;
  auto summary = trace::read(copy->bytes, ignore);
  if (!summary.ok()) return fail("dump", summary.error());
  std::printf("trace: %llu chunks, %llu records%s\n", static_cast<unsigned long long>(summary->chunks),
              static_cast<unsigned long long>(summary->records), summary->complete ? ", complete" : "");
  if (!summary->warning.empty()) std::printf("note: %s\n", summary->warning.c_str());
  return 0;
}

int run_remove(const ShmArgs& a) {
  Status st = SharedSegment::remove(a.name);
  if (!st.ok()) return fail("remove", st.error());
  std::printf("removed shared segment '%s'\n", a.name.c_str());
  return 0;
}

const RegisterCommand kRegister([](CLI::App& app) -> std::function<int()> {
  auto args = std::make_shared<ShmArgs>();
  CLI::App* shm = app.add_subcommand("shm", "Inspect, copy out or remove an objprof shared-memory segment");
  shm->require_subcommand(1);
  args->info = shm->add_subcommand("info", "Show a segment's layout, writer state, ring counters and bitmaps");
  args->info->add_option("name", args->name, "segment name (as in /dev/shm)")->required();
  args->dump = shm->add_subcommand("dump", "Write the trace committed to a segment's ring to a file");
  args->dump->add_option("name", args->name, "segment name (as in /dev/shm)")->required();
  args->dump->add_option("-o,--out", args->out, "trace file to write")->required();
  args->remove = shm->add_subcommand("remove", "Remove a segment (its data is gone once no process maps it)");
  args->remove->add_option("name", args->name, "segment name (as in /dev/shm)")->required();
  return [args]() -> int {
    if (args->info->parsed()) return run_info(*args);
    if (args->dump->parsed()) return run_dump(*args);
    if (args->remove->parsed()) return run_remove(*args);
    return 2;
  };
});

}  // namespace
}  // namespace objprof::cli
