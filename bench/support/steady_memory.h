// For benchmarks that time whole runs of a workload, each with a fresh profiler and heap: keep
// the memory a run frees mapped for the next one. By default glibc serves blocks above 128 KiB
// (and, after a free, above a moving threshold) with fresh mmaps and returns freed memory to the
// kernel, so every run's profiler tables, heap and interpreter state meet fresh pages, and
// their page faults (the kernel zeroing each page, at a cost that varies from run to run on a
// VM) land inside the timed part. A long-running runtime reuses its memory; so do these runs.
// Not for the benchmarks that measure growth itself (bench_trace's MemorySink).
#pragma once

#include <malloc.h>

namespace objprof::bench {

inline void keep_freed_memory_mapped() {
  // Blocks up to 32 MiB (glibc's maximum) come from the arenas, not from their own mmap...
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  // ...and a free never gives the top of an arena back to the kernel.
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

}  // namespace objprof::bench
