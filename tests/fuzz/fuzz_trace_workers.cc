// Fuzz target, differential: a resealed trace (reseal.h) analyzed by one worker, by two (the
// reader and front on their own thread, the back in shards) and by three (the reader on a
// thread of its own, its records relayed to the front) gives the same analysis, or the same
// error. analyze() promises a result that does not depend on the number of workers; this
// holds it to that on malformed input too, where the threads' hand-offs and shutdowns differ.
#include "../analysis/analysis_difference.h"
#include "fuzz_check.h"
#include "reseal.h"
#include "trace_views.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

objprof::Result<objprof::analysis::TraceAnalysis> analyze_with(const std::vector<std::byte>& t, unsigned workers) {
  objprof::analysis::AnalyzerOptions o;
  o.workers = workers;
  return objprof::analysis::analyze(t, o);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace objprof;
  fuzz::single_threaded();  // oneTBB's; the analyzer's workers are threads of its own
  std::vector<std::byte> t(reinterpret_cast<const std::byte*>(data), reinterpret_cast<const std::byte*>(data) + size);
  fuzz::reseal(t);
  const auto reference = analyze_with(t, 1);
  for (unsigned workers : {2u, 3u}) {
    const auto other = analyze_with(t, workers);
    OBJPROF_FUZZ_CHECK(reference.ok() == other.ok());
    if (!reference.ok()) {
      OBJPROF_FUZZ_CHECK(reference.error().code == other.error().code);
      OBJPROF_FUZZ_CHECK(reference.error().message == other.error().message);
      continue;
    }
    if (const std::string d = test::first_difference(*reference, *other); !d.empty()) {
      std::fprintf(stderr, "%u workers' analysis differs from one worker's in: %s\n", workers, d.c_str());
      std::abort();
    }
  }
  return 0;
}
