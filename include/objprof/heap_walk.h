// HeapWalker: how a runtime lets objprof walk its object graph, to find the reference path from
// a GC root to a suspected leak (path_search.h). objprof knows addresses, sizes and access
// times, never object layouts or roots; the runtime knows both. It implements this interface
// and hands it to the profiler (ProfilerOptions::heap_walker), which walks only at a GC that
// found new suspects (gc_end, on the collector thread), never otherwise.
//
// The contract:
// - A walk is one session: begin_walk(), then any number of roots() / references() /
//   type_id() / root_name() calls, then end_walk(). The heap must not change in between: the
//   runtime answers begin_walk() with false when it cannot guarantee that now (mutators
//   running inside a lazy sweep's bracket, say), and the profiler tries again at a later GC.
// - Addresses are the objects' current (post-GC) addresses, as the profiler's hooks left them.
// - Enumeration is deterministic: the same heap gives the same calls in the same order (the
//   search picks the first of several shortest paths, and finds an edge again by its ordinal).
// - Callbacks are cheap on purpose: a root is a kind and a runtime-chosen 64-bit token, named
//   by root_name() only for the root of a path found; a reference is a field name the runtime
//   already stores (the view need only live for the call) or an element index.
// - Null references need not be reported; a reported 0 is ignored.
#pragma once

#include "objprof/heap_space.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace objprof {

// What holds a root: e.g. a class's static field, a slot of a thread's stack frame, a handle
// table entry, a registry (Lua's registry, a JNI global table), a global variable.
enum class RootKind : std::uint8_t {
  kStatic = 0,
  kStackFrame = 1,
  kHandle = 2,
  kRegistry = 3,
  kGlobal = 4,
  kOther = 5,
};
inline constexpr std::uint8_t kMaxRootKind = 5;
// "static", "stack frame", "handle", "registry", "global", "other".
const char* root_kind_name(RootKind kind) noexcept;

// The type id of an object the walker cannot type.
inline constexpr std::uint32_t kUnknownType = 0xFFFF'FFFFu;

class RootVisitor {
 public:
  // One root slot that refers to `target`. `token` identifies the root to root_name().
  virtual void root(RootKind kind, std::uint64_t token, Address target) = 0;

 protected:
  ~RootVisitor() = default;
};

class ReferenceVisitor {
 public:
  // A reference held in the field `name` (a class field, a table's string key).
  virtual void field(std::string_view name, Address target) = 0;
  // A reference held at `index` of an array (or a table's integer key).
  virtual void element(std::uint64_t index, Address target) = 0;

 protected:
  ~ReferenceVisitor() = default;
};

class HeapWalker {
 public:
  virtual ~HeapWalker() = default;
  // Starts a walk; false: the heap cannot be walked now (nothing else is called).
  virtual bool begin_walk() { return true; }
  virtual void end_walk() {}
  // Every root, each slot once (the same object may be the target of several roots).
  virtual void roots(RootVisitor& out) = 0;
  // Every reference the object at `obj` holds, in a fixed order.
  virtual void references(Address obj, ReferenceVisitor& out) = 0;
  // The object's type id as given to Profiler::define_type, or kUnknownType.
  virtual std::uint32_t type_id(Address /*obj*/) { return kUnknownType; }
  // A name for the user: "static Cache.map", "thread main frame 2 slot 3", "Lua registry".
  virtual std::string root_name(RootKind kind, std::uint64_t token);
};

}  // namespace objprof
