// objprof-lua's options, from the environment (the `objprof lua` command sets them from its
// flags; docs/embedding.md lists them). A bad value is an error, never a silent default.
#pragma once

#include <objprof/fate_reports.h>
#include <objprof/result.h>

#include <cstdint>
#include <string>

namespace objprof_lua {

enum class GcMode { kLuaDefault, kIncremental, kGenerational };

struct Options {
  std::uint32_t stale_after = 4;            // OBJPROF_LUA_STALE_AFTER: GC_K
  std::uint64_t min_size = 256;             // OBJPROF_LUA_MIN_SIZE: bytes (footprint) to track
  // OBJPROF_LUA_STALE_BYTES: and idle while the program allocated this much ("auto": its
  // busiest epoch; 0: GC_K alone). ProfilerOptions::stale_after_bytes.
  std::uint64_t stale_bytes = ~std::uint64_t{0};
  std::string trace_path;                   // OBJPROF_LUA_TRACE: write the trace there
  GcMode gc = GcMode::kLuaDefault;          // OBJPROF_LUA_GC: incremental | generational
  std::uint64_t heap_bytes = std::uint64_t{1} << 30;  // OBJPROF_LUA_HEAP: the region (K/M/G suffixes)
  bool report = true;                       // OBJPROF_LUA_REPORT=0: no leak report at exit
  bool stats = false;                       // OBJPROF_LUA_STATS=1: profiler statistics at exit
  // OBJPROF_LUA_FATES: how the leak detector learns what each collection did to the objects it
  // tracks (objprof::FateReports): hooks (the sweep reports each free), survivors (atomic()
  // answers for the tracked objects alone: dead or alive, from their color) or cheaper (per
  // collection, whichever costs less; the default). A trace or the hook checks always take the
  // hooks.
  objprof::FateReports fates = objprof::FateReports::kCheaper;
  // OBJPROF_LUA_ELIM=1: run objprof's barrier-elimination pass on every prototype Lua loads and
  // rewrite the accesses it removes to barrier-free opcodes (docs/embedding.md, "Barrier
  // elimination"). Its promises: root marks at every atomic(), marks on writes into another
  // frame's registers, and the allocator's marks.
  bool elim = false;
  // OBJPROF_LUA_ELIM_FAULT (objprof-lua-check only, for tests): break one promise on purpose so
  // that the checker must report violations: no-root-marks (the frames' registers are not
  // marked at atomic() or at resume), no-frame-writes, no-upvalue-marks.
  enum class Fault { kNone, kNoRootMarks, kNoFrameWrites, kNoUpvalueMarks };
  Fault fault = Fault::kNone;
};

objprof::Result<Options> options_from_environment();
// "64M" -> 67108864; errors name the text.
objprof::Result<std::uint64_t> parse_bytes(const std::string& text);

}  // namespace objprof_lua
