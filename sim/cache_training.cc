#include "cache_training.h"

#include <objprof/profiler.h>

namespace objprof::sim {

Result<CacheProfile> train_cache_profile(const ir::Module& module, const HeapOptions& heap_options, InterpOptions io,
                                         const std::string& entry) {
  ProfilerOptions po;
  po.default_leak_printer = false;
  po.on_leak = {};
  po.mark_on_alloc = io.allocation_marks;
  po.mark_on_alloc_mode = io.barrier.mark;
  auto profiler = Profiler::create(std::move(po));
  if (!profiler.ok()) return profiler.error();
  auto heap = Heap::create(heap_options, profiler->get());
  if (!heap.ok()) return heap.error();
  io.profile_cache = true;
  io.jit = nullptr;
  io.cache_plan = nullptr;
  auto interp = Interpreter::create(module, **heap, profiler->get(), io);
  if (!interp.ok()) return interp.error();
  if (auto r = (*interp)->run(entry); !r.ok()) return r.error();
  return (*interp)->cache_profile();
}

}  // namespace objprof::sim
