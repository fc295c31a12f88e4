// The simulated runtime's HeapWalker (objprof/heap_walk.h): objprof's paths from roots to
// suspected leaks, through the sim's object layouts (SimType field names, array elements) and
// its roots (mutators' frames, statics and other root providers, handles). Created before the
// heap (ProfilerOptions::heap_walker is given when the profiler is made, the heap needs the
// profiler) and bound to it with set_heap; unbound, it declines every walk.
#pragma once

#include "heap.h"

#include <objprof/heap_walk.h>

namespace objprof::sim {

class SimHeapWalker final : public HeapWalker {
 public:
  void set_heap(Heap* heap) { heap_ = heap; }

  // The profiler walks inside gc_end, which the heap calls holding its mutex: the heap is
  // walkable unless a lazy sweep ends on one mutator while others run.
  bool begin_walk() override { return heap_ != nullptr && heap_->world_stopped_for_walk(); }
  void roots(RootVisitor& out) override;
  void references(Address obj, ReferenceVisitor& out) override;
  std::uint32_t type_id(Address obj) override { return Heap::header(obj).type; }
  std::string root_name(RootKind kind, std::uint64_t token) override { return heap_->root_name(kind, token); }

 private:
  Heap* heap_ = nullptr;
};

}  // namespace objprof::sim
