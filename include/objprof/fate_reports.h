// FateReports: how the stale tracker learns what each GC did to the objects it tracks
// (ProfilerOptions::fate_reports; docs/embedding.md, "Survivors from the collector"), and the
// names an embedding's options spell them with, so that every front end (objprof run,
// objprof lua, an embedder's own flags) accepts the same words.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace objprof {

enum class FateReports : std::uint8_t {
  // From the collector's per-object hooks (on_move, on_move_range, on_free, on_free_range,
  // on_free_batch), in every GC. The default.
  kHooks,
  // From report_survivors, in every GC: the collector reports each move and free only while
  // wants_object_events() says so (a trace, or the hook checks), and the tracker ignores them.
  kSurvivors,
  // Per GC, whichever way the profiler expects to cost less, decided at gc_begin and told by
  // wants_object_events(): report_survivors when the tracked objects are few beside the objects
  // allocated since the last GC (a hook call costs the collector a few instructions per object
  // it moves or frees, an answer a few dozen per tracked object), the hooks otherwise.
  kCheaper,
};

// "hooks", "survivors", "cheaper".
constexpr std::string_view fate_reports_name(FateReports f) noexcept {
  switch (f) {
    case FateReports::kHooks: return "hooks";
    case FateReports::kSurvivors: return "survivors";
    case FateReports::kCheaper: return "cheaper";
  }
  return "?";
}

// The value a name spells, or nothing (the caller's error can quote kFateReportsChoices).
constexpr std::optional<FateReports> fate_reports_from_name(std::string_view name) noexcept {
  for (FateReports f : {FateReports::kHooks, FateReports::kSurvivors, FateReports::kCheaper})
    if (name == fate_reports_name(f)) return f;
  return std::nullopt;
}

inline constexpr std::string_view kFateReportsChoices = "hooks, survivors or cheaper";

}  // namespace objprof
