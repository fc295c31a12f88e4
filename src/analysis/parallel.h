// parallel_range (private): the analyzer's parallel loop over an index range, in chunks of
// `grain`, with oneTBB. simple_partitioner: predictable chunks, no steal detection.
//
// Under ThreadSanitizer the loop runs on the calling thread: the Debian oneTBB library is not
// instrumented, so TSan cannot see its task hand-off and reports the task objects themselves
// as races. The chunk bodies are the same either way; the sanitizer still checks the
// analyzer's own threads (the front and the back's shard tasks, crew.h), whose hand-offs
// are visible to it.
#pragma once

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>

#include <cstddef>

namespace objprof::analysis::internal {

template <class Body>
void parallel_range(std::size_t n, std::size_t grain, Body&& body) {
  const tbb::blocked_range<std::size_t> all(0, n, grain);
#if defined(__SANITIZE_THREAD__)
  body(all);
#else
  tbb::parallel_for(all, body, tbb::simple_partitioner());
#endif
}

}  // namespace objprof::analysis::internal
