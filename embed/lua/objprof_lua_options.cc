#include "objprof_lua_options.h"

#include <fmt/core.h>

#include <charconv>
#include <cstdlib>
#include <initializer_list>
#include <utility>

namespace objprof_lua {
namespace {

objprof::Result<std::uint64_t> parse_uint(const char* name, const std::string& text, std::uint64_t max) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v > max)
    return objprof::make_error(objprof::ErrorCode::kInvalidArgument,
                               fmt::format("{}='{}' is not a whole number from 0 to {}", name, text, max));
  return v;
}

// One of a few named values: `name`='text' must be one of `choices`' names, and the error
// lists them ("use a, b or c"), so each option's spelling is written once.
template <typename E>
objprof::Result<E> parse_choice(const char* name, const std::string& text,
                                std::initializer_list<std::pair<const char*, E>> choices) {
  std::string names;
  std::size_t i = 0;
  for (const auto& [spelling, value] : choices) {
    if (text == spelling) return value;
    names += i == 0 ? "" : (i + 1 == choices.size() ? " or " : ", ");
    names += spelling;
    ++i;
  }
  return objprof::make_error(objprof::ErrorCode::kInvalidArgument, fmt::format("{}='{}': use {}", name, text, names));
}

}  // namespace

objprof::Result<std::uint64_t> parse_bytes(const std::string& text) {
  std::string digits = text;
  std::uint64_t unit = 1;
  if (!digits.empty()) {
    switch (digits.back()) {
      case 'K': case 'k': unit = std::uint64_t{1} << 10; break;
      case 'M': case 'm': unit = std::uint64_t{1} << 20; break;
      case 'G': case 'g': unit = std::uint64_t{1} << 30; break;
      default: break;
    }
    if (unit != 1) digits.pop_back();
  }
  auto v = parse_uint("size", digits, (std::uint64_t{1} << 46) / unit);
  if (!v.ok())
    return objprof::make_error(objprof::ErrorCode::kInvalidArgument,
                               fmt::format("'{}' is not a size (bytes, or a number with K, M or G, at most 64T)", text));
  return *v * unit;
}

objprof::Result<Options> options_from_environment() {
  Options o;
  auto env = [](const char* name) -> const char* {
    const char* v = std::getenv(name);
    return v && *v ? v : nullptr;
  };
  if (const char* v = env("OBJPROF_LUA_STALE_AFTER")) {
    auto k = parse_uint("OBJPROF_LUA_STALE_AFTER", v, 1u << 30);
    if (!k.ok()) return k.error();
    if (*k == 0) return objprof::make_error(objprof::ErrorCode::kInvalidArgument, "OBJPROF_LUA_STALE_AFTER must be at least 1");
    o.stale_after = static_cast<std::uint32_t>(*k);
  }
  if (const char* v = env("OBJPROF_LUA_MIN_SIZE")) {
    auto b = parse_bytes(v);
    if (!b.ok()) return objprof::make_error(objprof::ErrorCode::kInvalidArgument, "OBJPROF_LUA_MIN_SIZE: " + b.error().message);
    o.min_size = *b;
  }
  if (const char* v = env("OBJPROF_LUA_STALE_BYTES"); v && std::string(v) != "auto") {
    auto b = parse_bytes(v);
    if (!b.ok()) return objprof::make_error(objprof::ErrorCode::kInvalidArgument, "OBJPROF_LUA_STALE_BYTES: " + b.error().message);
    o.stale_bytes = *b;
  }
  if (const char* v = env("OBJPROF_LUA_TRACE")) o.trace_path = v;
  if (const char* v = env("OBJPROF_LUA_GC")) {
    auto g = parse_choice<GcMode>("OBJPROF_LUA_GC", v,
                                  {{"incremental", GcMode::kIncremental}, {"generational", GcMode::kGenerational}});
    if (!g.ok()) return g.error();
    o.gc = *g;
  }
  if (const char* v = env("OBJPROF_LUA_HEAP")) {
    auto b = parse_bytes(v);
    if (!b.ok()) return objprof::make_error(objprof::ErrorCode::kInvalidArgument, "OBJPROF_LUA_HEAP: " + b.error().message);
    if (*b < (std::uint64_t{1} << 20))
      return objprof::make_error(objprof::ErrorCode::kInvalidArgument, "OBJPROF_LUA_HEAP must be at least 1M");
    o.heap_bytes = *b;
  }
  if (const char* v = env("OBJPROF_LUA_FATES")) {
    const std::optional<objprof::FateReports> f = objprof::fate_reports_from_name(v);
    if (!f)
      return objprof::make_error(objprof::ErrorCode::kInvalidArgument,
                                 fmt::format("OBJPROF_LUA_FATES='{}': use {}", v, objprof::kFateReportsChoices));
    o.fates = *f;
  }
  if (const char* v = env("OBJPROF_LUA_REPORT")) o.report = std::string(v) != "0";
  if (const char* v = env("OBJPROF_LUA_STATS")) o.stats = std::string(v) != "0";
  if (const char* v = env("OBJPROF_LUA_ELIM")) {
    auto e = parse_choice<bool>("OBJPROF_LUA_ELIM", v, {{"0", false}, {"1", true}});
    if (!e.ok()) return e.error();
    o.elim = *e;
  }
  if (const char* v = env("OBJPROF_LUA_ELIM_FAULT")) {
    const std::string f = v;
#if !defined(LUA_OBJPROF_CHECK)
    return objprof::make_error(objprof::ErrorCode::kInvalidArgument,
                               "OBJPROF_LUA_ELIM_FAULT breaks the elimination's promises on purpose; only objprof-lua-check accepts it");
#endif
    auto fault = parse_choice<Options::Fault>("OBJPROF_LUA_ELIM_FAULT", f,
                                              {{"no-root-marks", Options::Fault::kNoRootMarks},
                                               {"no-frame-writes", Options::Fault::kNoFrameWrites},
                                               {"no-upvalue-marks", Options::Fault::kNoUpvalueMarks}});
    if (!fault.ok()) return fault.error();
    o.fault = *fault;
    if (!o.elim)
      return objprof::make_error(objprof::ErrorCode::kInvalidArgument, "OBJPROF_LUA_ELIM_FAULT needs OBJPROF_LUA_ELIM=1");
  }
  return o;
}

}  // namespace objprof_lua
