#include "heap_walker.h"

namespace objprof::sim {

void SimHeapWalker::roots(RootVisitor& out) {
  heap_->visit_named_roots([&](RootKind kind, std::uint64_t token, Address target) { out.root(kind, token, target); });
}

void SimHeapWalker::references(Address obj, ReferenceVisitor& out) {
  const SimType& t = heap_->type_of(obj);
  const std::uint64_t n = heap_->slot_count(obj);
  const std::uint64_t* s = Heap::slots(obj);
  if (t.is_array) {
    if (!t.elem_is_ref) return;
    for (std::uint64_t i = 0; i < n; ++i)
      if (s[i] != 0) out.element(i, s[i]);
    return;
  }
  for (std::uint64_t i = 0; i < n; ++i) {
    if (!t.slot_is_ref[i] || s[i] == 0) continue;
    // A type built by hand may name fewer fields than it has slots.
    if (i < t.field_names.size()) out.field(t.field_names[i], s[i]);
    else out.element(i, s[i]);
  }
}

}  // namespace objprof::sim
