// LuaHeapWalker: objprof's HeapWalker over a Lua state's object graph, so a leak report can say
// which table, global, upvalue or stack slot keeps a leaked object alive.
//
// Roots, longest-lived first (of equally short paths, the search keeps the first root's): the
// globals table (`_G`), the registry, the main thread's stack slots (named locals of Lua
// frames and C frames' slots: a Lua frame's temporaries hold something for an instruction or
// two, and a path through one would depend on where the GC struck), the basic types'
// metatables. References: a table's metatable, array part (element i), hash part (a string key
// is a field name, an integer key an element; other keys are shown as "[key]", and collectable
// keys are references too), a Lua closure's upvalues (by name) and prototype, a C closure's
// upvalues, a userdata's metatable and user values, a coroutine's stack slots, an upvalue's value.
// The walk runs inside gc_end, which Lua calls from its collector at the end of a sweep: no
// Lua code runs meanwhile, so the graph does not change.
#pragma once

#include <objprof/heap_walk.h>

struct lua_State;

namespace objprof_lua {

class LuaHeapWalker final : public objprof::HeapWalker {
 public:
  void set_state(lua_State* L) noexcept { L_ = L; }
  bool begin_walk() override { return L_ != nullptr; }
  void roots(objprof::RootVisitor& out) override;
  void references(objprof::Address obj, objprof::ReferenceVisitor& out) override;
  std::uint32_t type_id(objprof::Address obj) override;
  std::string root_name(objprof::RootKind kind, std::uint64_t token) override;

 private:
  lua_State* L_ = nullptr;
};

}  // namespace objprof_lua
