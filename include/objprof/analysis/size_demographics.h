// Object size demographics (thesis 004, 3.2.2 and 5.2.2): how many objects, and how many
// bytes, were allocated at each size, and how many are live at the end. With few distinct
// sizes (at most `exact_sizes`) every size is its own bin, as in the thesis (no cut-offs);
// otherwise bins are powers of two (17-32, 33-64, ...).
#pragma once

#include "objprof/analysis/object_metrics.h"
#include "objprof/analysis/trace_analysis.h"

#include <array>
#include <cstdint>
#include <vector>

namespace objprof::analysis {

struct SizeBin {
  std::uint64_t min = 0, max = 0;  // inclusive
  std::uint64_t allocated_objects = 0, allocated_bytes = 0;
  std::uint64_t live_objects = 0, live_bytes = 0;
};

struct SizeDemographics {
  bool exact = false;  // one bin per size
  std::vector<SizeBin> bins;  // increasing sizes; only non-empty bins
};

class SizeDemographicsBuilder {
 public:
  explicit SizeDemographicsBuilder(const TraceAnalysis& a, std::size_t exact_sizes = 24);
  void add(ObjectId o, const ObjectMetrics& m);
  void merge(const SizeDemographicsBuilder& other);
  SizeDemographics finish() const;

 private:
  struct Acc {
    std::uint64_t objects = 0, bytes = 0, live_objects = 0, live_bytes = 0;
  };
  static void add_to(Acc& acc, const Acc& x);
  const TraceAnalysis* a_;
  std::size_t exact_limit_;
  bool too_many_ = false;
  // Exact sizes while there are few: a small table searched from the last hit (sizes repeat).
  std::vector<std::pair<std::uint64_t, Acc>> exact_;
  std::array<std::uint8_t, 64> slot_{};  // size hash -> index in exact_ + 1 (0: unknown)
  Acc& exact_bin(std::uint64_t size);
  Acc pow2_[65];  // bin k: sizes in (2^(k-1), 2^k]; bin 0: size 0 and 1
};

SizeDemographics size_demographics(const TraceAnalysis& a, const ObjectFilter& filter = {}, std::size_t exact_sizes = 24);

}  // namespace objprof::analysis
