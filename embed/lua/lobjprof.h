// objprof's hook header for Lua 5.4 (the objprof build compiles Lua as C++, with LUA_OBJPROF
// and LUA_USER_H="lobjprof.h", so lua.h includes this file in every Lua source). It defines the
// luai_objprof_* macros that objprof-hooks.patch places in Lua; without it they are no-ops.
//
// Where the barrier's state lives: in Lua's own per-VM structure. The patch adds one field to
// global_State (luai_objprof_gfield) holding the last-accessed-object cache of calls of closures
// (an objprof BarrierSlot: Lua runs one OS thread per state, its coroutines included) and a
// copy of the space's BarrierDescriptor (BarrierSpaceCopy: the granule a constant, refreshed
// after every harvest); an access is objprof's inline C++ barrier on them. objprof does not
// know the slot, so the glue resets it where the profiler resets its own caches (gc_begin,
// gc_end). Every other access marks without a cache (see access()). Before the profiler is
// attached (and after lua_close has started) the copy is an empty space: nothing is
// marked. Everything else is an out-of-line call into objprof_lua.cc.
#ifndef lobjprof_h
#define lobjprof_h

#if defined(LUA_OBJPROF)

#include <objprof/barrier.h>
#include <objprof/profiler.h>

#include <cstddef>
#include <cstdint>

struct lua_State;
struct GCObject;
struct global_State;
struct Proto;
struct TValue;

namespace objprof_lua {

struct Vm;

// The field the patch adds to global_State.
// Lua's objects are 8-byte aligned: the space's granule, fixed in the barrier's copy of it
// (create_vm makes the space with this granule).
using SpaceCopy = objprof::BarrierSpaceCopy<3>;

struct GlobalHook {
  // The cache of calls of Lua closures, first: the barrier's hit path reads only this. A loop
  // calls one closure many times (`a(i, j)` in spectral_norm, a recursion), so calls hit.
  objprof::BarrierSlot call_slot;
  // The space as the barriers read it: a copy of its descriptor here, where the interpreter
  // already has global_State, with Lua's 8-byte granule as a constant (barrier_space_copy.h).
  // Its active buffer changes at every harvest: the glue copies the descriptor again after
  // each gc_begin (copy_space). Empty (marks nothing) before the profiler is attached and
  // after lua_close has started.
  SpaceCopy copy;
  Vm* vm;  // null: objprof is not (or no longer) attached to this state
  // The state's profiler while it is attached (null before, and from lua_close on): the sweep's
  // frees go to its inline short path (free_hook).
  objprof::Profiler* prof;
  // Footprints below this change nothing objprof keeps (the profiler's min_tracked_size with
  // neither a trace nor hook checks, 0 with either, the largest value while not attached): a
  // table's resize whose footprint cannot reach it is not reported (luai_objprof_resize).
  std::uint64_t resize_floor;
  // Barrier elimination is on (OBJPROF_LUA_ELIM): atomic() and thread switches mark the
  // frames' registers and upvalues, and writes into another frame's registers or a shared
  // upvalue mark what they write (objprof_lua_elim.h).
  bool root_marks;
  bool upvalue_marks;  // false only under OBJPROF_LUA_ELIM_FAULT=no-upvalue-marks
  // The collection open now takes its tracked objects' fates from atomic()'s answers
  // (OBJPROF_LUA_FATES; on_survivors): the sweep's frees skip the profiler.
  bool answers;
  bool frame_write_marks;
#if defined(LUA_OBJPROF_CHECK)
  // objprof-lua-check: barriers run, accesses that ran without one, and those of them whose
  // object was not marked in the current epoch (violations of the elimination's soundness).
  std::uint64_t barriers;
  std::uint64_t unbarriered;
  std::uint64_t violations;
#endif
};

using Alloc = void* (*)(void*, void*, std::size_t, std::size_t);
// Called by lua_newstate: the hooks of a state with objprof's allocator go to its profiler.
// main_thread: the state's only object so far (lua_newstate links it into allgc first); it is
// not a heap object for the profiler, but barriers mark it.
void init(GlobalHook& hook, Alloc frealloc, void* ud, const GCObject* main_thread) noexcept;
void on_newobj(lua_State* L, GCObject* o, std::size_t size);
void on_free(lua_State* L, GCObject* o);
void on_resize(lua_State* L, GCObject* o);
void on_gc_begin(lua_State* L);
void on_gc_end(lua_State* L);
void on_survivors(lua_State* L);
void on_close(lua_State* L);
Vm* vm_of(lua_State* L) noexcept;  // null when the state is not (or no longer) profiled
bool incremental_forced(const Vm& vm) noexcept;
// luaL_newstate's allocator and its ud: objprof's arena and a new profiler for the state.
Alloc allocator(Alloc lua_default) noexcept;
void* allocator_ud(void* lua_default);

// Barrier elimination (objprof_lua_elim.cc).
void on_newproto(lua_State* L, Proto* p);                // the pass over a loaded chunk's prototypes
void on_stackroots(global_State* g, lua_State* th);      // root marks: th's registers, in atomic()
void on_resume(lua_State* L);                            // ... or a suspended coroutine's, at resume
void on_resumed(lua_State* from);                        // the resumer continues after lua_resume
void on_framewrite(lua_State* L, const TValue* v);        // a write into another frame's register
void check_unbarriered(lua_State* L, const GCObject* o);  // objprof-lua-check: o must be marked

// Tables, strings, userdata and threads: the bit is set on every access, with no cache. Code
// that alternates between a few tables (`perm[i]` and `perm1[i]` in fannkuch, `self` and a
// packet in richards) misses a one-entry cache on most accesses, and the compare's branch then
// mispredicts, which costs more than the byte store it would save: without the cache fannkuch
// runs 1.10-1.19x stock Lua instead of 1.24-1.32x, richards 1.15-1.18x instead of 1.18-1.22x,
// though both execute more instructions (docs/results.md, "A cache for calls only").
// The mark tests the bit first (kRacyTestFirst): the same loops mark the same few bitmap bytes
// again and again, and a plain `or` to memory makes each mark wait for the previous one's store
// to the same byte; a load and a test do not (fannkuch 1.11x -> 1.09x stock Lua, nbody 1.06-1.07x
// -> 1.03-1.04x, across five code layouts, though 0.4 % more instructions: docs/results.md,
// "Table barriers test the bit first").
using AccessBarrier = objprof::BarrierPolicy<false, objprof::MarkMode::kRacyTestFirst>;
OBJPROF_ALWAYS_INLINE void access(GlobalHook& hook, const void* obj) noexcept {
#if defined(LUA_OBJPROF_CHECK)
  ++hook.barriers;
#endif
  objprof::access<AccessBarrier>(hook.copy, reinterpret_cast<objprof::Address>(obj));
}

// A call's access of the closure it calls: the barrier with the calls' cache.
OBJPROF_ALWAYS_INLINE void access_call(GlobalHook& hook, const void* closure) noexcept {
#if defined(LUA_OBJPROF_CHECK)
  ++hook.barriers;
#endif
  objprof::access<objprof::DefaultBarrier>(hook.call_slot, hook.copy, reinterpret_cast<objprof::Address>(closure));
}

// The sweep frees o (freeobj, once per dead object): its inline short path in the profiler (one
// bit test and a count) when that applies, else the glue's on_free (out of line), which follows
// dying threads and prototypes itself and hands other frees over in batches (a trace or hook
// checks on, or a free outside a bracket, which the profiler refuses with an error).
OBJPROF_ALWAYS_INLINE void free_hook(GlobalHook& hook, lua_State* L, GCObject* o, bool thread_or_proto) {
  objprof::Profiler* prof = hook.prof;
  if (prof == nullptr) return;
  if (!thread_or_proto) {
    if (hook.answers) return;  // atomic() answered for the tracked objects (on_survivors)
    if (prof->on_free_if_inline(reinterpret_cast<objprof::Address>(o))) [[likely]] return;
  }
  on_free(L, o);
}

// The bitmap was cleared, or memory freed: the next access of anything must mark again.
inline void reset_caches(GlobalHook& hook) noexcept { hook.call_slot.reset(); }

// The hook's copy of the space the barriers mark, from its descriptor: at lua_newstate, after
// every harvest (the active buffer changed), and the empty space at lua_close.
inline void copy_space(GlobalHook& hook, const objprof::BarrierDescriptor& space) noexcept {
  (void)hook.copy.copy_from(space);  // the space's granule is SpaceCopy's (create_vm)
}

}  // namespace objprof_lua

#define luai_objprof_gfield		objprof_lua::GlobalHook objprof;
#define luai_objprof_init(g)		objprof_lua::init((g)->objprof, (g)->frealloc, (g)->ud, (g)->allgc)
#define luai_objprof_newobj(L,o,sz)	objprof_lua::on_newobj(L, o, sz)
#define luai_objprof_free(L,o)	\
  objprof_lua::free_hook(G(L)->objprof, L, o, (o)->tt == LUA_VTHREAD || (o)->tt == LUA_VPROTO)
// A table's resize goes to the glue only if its footprint may reach the hook's floor: an upper
// bound from the fields at hand (the array part is below twice `alimit`; a dummy hash part
// counts as one node) saves the call for the many small tables a program builds (binary_trees:
// one per constructor). A thread's stack reallocation always goes.
#define luai_objprof_tablebound(t)	\
  (sizeof(Table) + 2 * sizeof(TValue) * static_cast<std::uint64_t>((t)->alimit) + \
   (sizeof(Node) << (t)->lsizenode))
#define luai_objprof_resize(L,o)	\
  (((o)->tt != LUA_VTABLE || luai_objprof_tablebound(gco2t(o)) >= G(L)->objprof.resize_floor) \
     ? objprof_lua::on_resize(L, o) : (void)0)
#define luai_objprof_access(L,o)	objprof_lua::access(G(L)->objprof, (o))
// Inside luaV_execute the table barriers read the hook through a local: L lives on the stack
// there (the interpreter's registers hold base, pc, k and the closure), so G(L)->objprof is two
// dependent loads per access where the local is one (fannkuch 8: 362.1 M -> 356.0 M
// instructions).
#define luai_objprof_exechook(L)	objprof_lua::GlobalHook* const luai_objprof_exechook_ = &G(L)->objprof
#define luai_objprof_execaccess(o)	objprof_lua::access(*luai_objprof_exechook_, (o))
#define luai_objprof_gcbegin(L)		objprof_lua::on_gc_begin(L)
#define luai_objprof_gcend(L)		objprof_lua::on_gc_end(L)
#define luai_objprof_survivors(L)	objprof_lua::on_survivors(L)
#define luai_objprof_close(L)		objprof_lua::on_close(L)
#define luai_objprof_allocf(f)		objprof_lua::allocator(f)
#define luai_objprof_allocud(ud)	objprof_lua::allocator_ud(ud)
#define luai_objprof_newproto(L,p)	objprof_lua::on_newproto(L, p)
#define luai_objprof_stackroots(g,th)	((g)->objprof.root_marks ? objprof_lua::on_stackroots(g, th) : (void)0)
#define luai_objprof_resume(L)	(G(L)->objprof.root_marks ? objprof_lua::on_resume(L) : (void)0)
#define luai_objprof_resumed(from)	((from) && G(from)->objprof.root_marks ? objprof_lua::on_resumed(from) : (void)0)
#define luai_objprof_framewrite(L,v)	\
  (G(L)->objprof.frame_write_marks && iscollectable(v) ? objprof_lua::on_framewrite(L, v) : (void)0)
#if defined(LUA_OBJPROF_CHECK)
#define luai_objprof_unbarriered(L,o)	objprof_lua::check_unbarriered(L, o)
#else
#define luai_objprof_unbarriered(L,o)	((void)0)
#endif
// A call's access of the closure it calls. With barrier elimination's root marks, a Lua frame
// that calls its own closure (recursion) needs no barrier: the closure sits in the frame's
// function slot, so it was root-marked at the last atomic() or accessed by the call that
// started the frame (or by the first call of the recursion) in this epoch.
#define luai_objprof_call(L,ci,func)	\
  ((G(L)->objprof.root_marks && isLua(ci) && clLvalue(s2v((ci)->func)) == clLvalue(s2v(func))) \
     ? luai_objprof_unbarriered(L, gcvalue(s2v(func))) : objprof_lua::access_call(G(L)->objprof, gcvalue(s2v(func))))

#endif  // LUA_OBJPROF
#endif  // lobjprof_h
