#include "objprof_lua_walker.h"

#include "ldebug.h"
#include "lfunc.h"
#include "lobject.h"
#include "lstate.h"
#include "ltable.h"
#include "lua.h"

#include <fmt/core.h>

#include <string>

namespace objprof_lua {
namespace {

// Root tokens: the kind says which list, the token which entry.
constexpr std::uint64_t kGlobalsToken = 0, kRegistryToken = 1;

objprof::Address address_of(const TValue* v) {
  return iscollectable(v) ? reinterpret_cast<objprof::Address>(gcvalue(v)) : 0;
}

// The globals table, registry[LUA_RIDX_GLOBALS].
const TValue* globals(global_State* g) {
  Table* reg = hvalue(&g->l_registry);
  return luaH_realasize(reg) >= LUA_RIDX_GLOBALS ? &reg->array[LUA_RIDX_GLOBALS - 1] : nullptr;
}

void table_references(Table* h, objprof::ReferenceVisitor& out) {
  if (h->metatable) out.field("(metatable)", reinterpret_cast<objprof::Address>(h->metatable));
  const unsigned n = luaH_realasize(h);
  for (unsigned i = 0; i < n; ++i)
    if (const objprof::Address a = address_of(&h->array[i])) out.element(i + 1, a);
  const std::size_t nodes = sizenode(h);
  for (std::size_t i = 0; i < nodes; ++i) {
    Node* n = gnode(h, i);
    if (isempty(gval(n))) continue;
    // A table used as a set holds its objects as keys (strings hold nothing further).
    if (keyiscollectable(n) && !ttisstring(gval(n)) && keytt(n) != ctb(LUA_VSHRSTR) && keytt(n) != ctb(LUA_VLNGSTR))
      out.field("(key)", reinterpret_cast<objprof::Address>(gckey(n)));
    const objprof::Address v = address_of(gval(n));
    if (!v) continue;
    if (keyisinteger(n)) {
      out.element(static_cast<std::uint64_t>(keyival(n)), v);
    } else if (keytt(n) == ctb(LUA_VSHRSTR) || keytt(n) == ctb(LUA_VLNGSTR)) {
      TString* k = keystrval(n);
      out.field(std::string_view(getstr(k), tsslen(k)), v);
    } else {
      out.field("[key]", v);
    }
  }
}

void stack_references(lua_State* th, objprof::ReferenceVisitor& out) {
  std::uint64_t i = 0;
  for (StkId s = th->stack; s < th->top; ++s, ++i)
    if (const objprof::Address a = address_of(s2v(s))) out.element(i, a);
}

// What holds a main-thread stack slot: the frame whose registers hold it and, for a Lua
// function, the local's name at the frame's current pc (null for a temporary register).
struct SlotOwner {
  bool found = false, lua = false;
  const Proto* p = nullptr;
  const char* local = nullptr;
};

SlotOwner slot_owner(lua_State* L, StkId at) {
  SlotOwner o;
  for (CallInfo* ci = L->ci; ci != nullptr; ci = ci->previous) {
    if (at <= ci->func) continue;  // below this frame's registers: an older frame's
    o.found = true;
    o.lua = isLua(ci);
    if (o.lua) {
      o.p = ci_func(ci)->p;
      o.local = luaF_getlocalname(o.p, static_cast<int>(at - ci->func), pcRel(ci->u.l.savedpc, o.p));  // registers count from 1
    }
    return o;
  }
  return o;
}

// A temporary register of a Lua frame is not a root worth showing: what it holds for an
// instruction or two (a global loaded to index it, a call's arguments) is held by something
// lasting too, and a path through it would change with where the GC struck.
bool is_root_slot(lua_State* L, StkId at) {
  const SlotOwner o = slot_owner(L, at);
  return !o.found || !o.lua || o.local != nullptr;
}

// "local 'cache' of the main chunk (memo.lua)".
std::string stack_slot_name(lua_State* L, std::uint64_t slot) {
  const SlotOwner o = slot_owner(L, L->stack + slot);
  if (!o.found) return fmt::format("Lua main thread stack slot {}", slot);
  if (!o.lua) return fmt::format("Lua main thread stack slot {} (a C function's frame)", slot);
  std::string source = o.p->source ? std::string(getstr(o.p->source), tsslen(o.p->source)) : "?";
  if (source.starts_with('@') || source.starts_with('=')) source.erase(0, 1);  // a file name, or a given name
  const std::string where = o.p->linedefined == 0 ? fmt::format("the main chunk ({})", source)
                                                  : fmt::format("the function at {}:{}", source, o.p->linedefined);
  if (o.local) return fmt::format("local '{}' of {}", o.local, where);
  return fmt::format("Lua main thread stack slot {} (a temporary of {})", slot, where);
}

}  // namespace

void LuaHeapWalker::roots(objprof::RootVisitor& out) {
  global_State* g = G(L_);
  if (const TValue* gt = globals(g); gt && iscollectable(gt))
    out.root(objprof::RootKind::kGlobal, kGlobalsToken, address_of(gt));
  out.root(objprof::RootKind::kRegistry, kRegistryToken, address_of(&g->l_registry));
  lua_State* main = g->mainthread;
  std::uint64_t i = 0;
  for (StkId s = main->stack; s < main->top; ++s, ++i)
    if (const objprof::Address a = address_of(s2v(s)); a && is_root_slot(main, s))
      out.root(objprof::RootKind::kStackFrame, i, a);
  for (int t = 0; t < LUA_NUMTAGS; ++t)
    if (g->mt[t]) out.root(objprof::RootKind::kOther, static_cast<std::uint64_t>(t), reinterpret_cast<objprof::Address>(g->mt[t]));
}

void LuaHeapWalker::references(objprof::Address obj, objprof::ReferenceVisitor& out) {
  GCObject* o = reinterpret_cast<GCObject*>(obj);
  switch (o->tt) {
    case LUA_VTABLE: table_references(gco2t(o), out); break;
    case LUA_VLCL: {
      LClosure* cl = gco2lcl(o);
      if (cl->p) out.field("(prototype)", reinterpret_cast<objprof::Address>(cl->p));
      for (int i = 0; i < cl->nupvalues; ++i) {
        UpVal* uv = cl->upvals[i];
        if (!uv) continue;
        const objprof::Address a = address_of(uv->v);
        if (!a) continue;
        TString* name = cl->p && i < cl->p->sizeupvalues ? cl->p->upvalues[i].name : nullptr;
        if (name) out.field(std::string_view(getstr(name), tsslen(name)), a);
        else out.element(static_cast<std::uint64_t>(i), a);
      }
      break;
    }
    case LUA_VCCL: {
      CClosure* cl = gco2ccl(o);
      for (int i = 0; i < cl->nupvalues; ++i)
        if (const objprof::Address a = address_of(&cl->upvalue[i])) out.element(static_cast<std::uint64_t>(i) + 1, a);
      break;
    }
    case LUA_VUSERDATA: {
      Udata* u = gco2u(o);
      if (u->metatable) out.field("(metatable)", reinterpret_cast<objprof::Address>(u->metatable));
      for (int i = 0; i < u->nuvalue; ++i)
        if (const objprof::Address a = address_of(&u->uv[i].uv)) out.element(static_cast<std::uint64_t>(i) + 1, a);
      break;
    }
    case LUA_VTHREAD: stack_references(gco2th(o), out); break;
    case LUA_VUPVAL:
      if (const objprof::Address a = address_of(gco2upv(o)->v)) out.field("(value)", a);
      break;
    default: break;  // strings and prototypes hold nothing a leak hides behind
  }
}

std::uint32_t LuaHeapWalker::type_id(objprof::Address obj) {
  return reinterpret_cast<GCObject*>(obj)->tt;  // the type ids objprof_lua.cc defines
}

std::string LuaHeapWalker::root_name(objprof::RootKind kind, std::uint64_t token) {
  switch (kind) {
    case objprof::RootKind::kGlobal: return "Lua globals (_G)";
    case objprof::RootKind::kRegistry: return "Lua registry";
    case objprof::RootKind::kStackFrame: return stack_slot_name(G(L_)->mainthread, token);
    default: return fmt::format("metatable of basic type {}", token);
  }
}

}  // namespace objprof_lua
