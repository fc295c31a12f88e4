// require_same: two analyses of one trace agree in every object's chain, every GC record and
// every counter (first_difference names the first field that does not). The differential
// tests of the analyzer's threads use it (one worker's result is the reference).
#pragma once

#include "analysis_difference.h"

#include <catch2/catch.hpp>

#include <string>

namespace objprof::test {

inline void require_same(const analysis::TraceAnalysis& x, const analysis::TraceAnalysis& y) {
  const std::string difference = first_difference(x, y);
  INFO("the analyses differ in: " << difference);
  REQUIRE(difference.empty());
}

}  // namespace objprof::test
