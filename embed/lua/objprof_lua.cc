// objprof inside Lua 5.4: the glue between the hooks of objprof-hooks.patch (lobjprof.h) and
// objprof's public API, consumed as an installed package (find_package(objprof)).
//
// - Heap: every collectable object lives in one reserved region, one objprof HeapSpace. Lua's
//   allocator is a oneTBB memory pool whose raw memory comes from that region, first from its
//   start (so harvests scan only the used part: Profiler::set_space_used). An exhausted region
//   is Lua's own "not enough memory" error.
// - Sites: the running Lua function's source and current line ("leak.lua:12"), interned per
//   (prototype, pc); allocations inside C functions belong to the calling Lua frame.
//   Types: the Lua type of the object's variant tag.
// - Collector: Lua's incremental collector sweeps between mutator steps; objprof's bracket
//   opens at atomic() and closes at the end of the sweep (profiler.h, "let mutators run
//   inside the bracket"). lua_close first completes a sweep in progress, reports, finishes
//   the trace, and detaches: the frees of lua_close are not profiled.
// - The barrier state sits in Lua's global_State (lobjprof.h).
#include "lobjprof.h"

#include "ldebug.h"
#include "lgc.h"
#include "lobject.h"
#include "lstate.h"
#include "lstring.h"
#include "ltable.h"
#include "lua.h"

#include "objprof_lua_elim.h"
#include "objprof_lua_options.h"
#include "objprof_lua_walker.h"

#include <objprof/profiler.h>

#define TBB_PREVIEW_MEMORY_POOL 1
#include <oneapi/tbb/memory_pool.h>

#include <fmt/core.h>
#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace objprof_lua {

using objprof::Address;

// The reserved region and its raw blocks: handed out from the start (the used extent is what
// harvests scan), reused best-fit when the pool gives blocks back.
class Region {
 public:
  explicit Region(std::uint64_t bytes) : bytes_((bytes + 4095) & ~std::uint64_t{4095}) {
    bytes = bytes_;
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      std::fprintf(stderr, "objprof-lua: cannot reserve a heap region of %llu bytes: %s\n",
                   static_cast<unsigned long long>(bytes), std::strerror(errno));
      std::exit(1);
    }
    begin_ = static_cast<char*>(p);
    top_ = begin_;
  }
  char* begin() const noexcept { return begin_; }
  std::uint64_t bytes() const noexcept { return bytes_; }
  std::uint64_t used() const noexcept { return static_cast<std::uint64_t>(top_ - begin_); }

  char* take(std::size_t n) {
    n = (n + 4095) & ~std::size_t{4095};
    if (auto it = free_.lower_bound(n); it != free_.end()) {
      char* p = it->second;
      const std::size_t have = it->first;
      free_.erase(it);
      if (have > n) free_.emplace(have - n, p + n);
      return p;
    }
    if (n > bytes_ - used()) return nullptr;  // exhausted: Lua raises "not enough memory"
    char* p = top_;
    top_ += n;
    return p;
  }
  void give_back(char* p, std::size_t n) {
    n = (n + 4095) & ~std::size_t{4095};
    if (p + n == top_) top_ = p;
    else free_.emplace(n, p);
  }

 private:
  std::uint64_t bytes_;
  char* begin_ = nullptr;
  char* top_ = nullptr;
  std::multimap<std::size_t, char*> free_;
};

// The memory pool's source of raw memory (a std::allocator-shaped adaptor over the region).
struct RawAlloc {
  using value_type = char;
  Vm* vm;
  explicit RawAlloc(Vm* v) : vm(v) {}
  char* allocate(std::size_t n);
  void deallocate(char* p, std::size_t n);
};

struct Vm {
  Options opt;
  Region region;
  tbb::memory_pool<RawAlloc> pool;
  std::unique_ptr<objprof::Profiler> prof;
  objprof::ThreadState* thread = nullptr;
  const objprof::BarrierDescriptor* space = nullptr;
  objprof::SpaceId space_id = 0;
  lua_State* main = nullptr;
  LuaHeapWalker walker;  // paths from roots for the report (bound to the state at its first hook)
  std::unique_ptr<ProtoEliminator> elim;  // OBJPROF_LUA_ELIM=1
  // Suspended coroutines whose registers have not been root-marked since the last atomic():
  // marked when resumed (on_resume), so a coroutine that is never resumed again keeps no
  // object alive in the profile (its leaks stay visible).
  std::unordered_set<const lua_State*> roots_at_resume;
  bool closed = false;
  // Sites: "source:line" -> id, and per prototype a pc -> id cache (0 = not yet looked up).
  std::unordered_map<std::string, std::uint32_t> site_ids;
  std::unordered_map<const Proto*, std::vector<std::uint32_t>> proto_sites;
  const Proto* last_proto = nullptr;
  std::vector<std::uint32_t>* last_sites = nullptr;
  // In front of them, the site of each allocating instruction, direct-mapped by the frame's
  // saved pc: one load and compare per allocation instead of the prototype lookup and the pc
  // arithmetic (binary_trees: 54 instructions a call before). A saved pc points into a live
  // prototype's code, so an entry can go stale only when its prototype dies and another one's
  // code takes the memory: on_free drops a dying prototype's entries (forget_code).
  struct PcSite { const Instruction* pc; std::uint32_t site; };
  static constexpr std::size_t kPcSites = 1024;
  std::unique_ptr<PcSite[]> pc_sites{new PcSite[kPcSites]()};
  static std::size_t pc_slot(const Instruction* pc) noexcept {
    return (reinterpret_cast<std::uintptr_t>(pc) / sizeof(Instruction)) & (kPcSites - 1);
  }
  // The allocation sites of recently created tables and threads, direct-mapped by address: a
  // table almost always grows right after its creation (a constructor, a fill loop), and then
  // the object it starts tracking is filed under where it was made, not under the line that
  // grew it. A table that grows much later is filed under the growing line.
  struct RecentSite { Address addr; std::uint32_t site; };
  static constexpr std::size_t kRecent = 4096;
  std::unique_ptr<RecentSite[]> recent{new RecentSite[kRecent]()};
  static std::size_t recent_slot(Address a) noexcept { return (a >> 4) & (kRecent - 1); }
  // Lua's sweep frees one object at a time: the deaths go to the profiler in batches
  // (on_free_batch), handed over before the next allocation (which may reuse their memory) and
  // before the bracket ends (flush_frees).
  static constexpr std::size_t kFreeBatch = 256;
  // A resize to a footprint below min_tracked changes nothing the profiler keeps unless it
  // writes a trace or checks the hooks (`every_resize`): on_resize then stops at the footprint.
  std::uint64_t min_tracked = 0;
  bool every_resize = true;
  // on_newobj's short path may apply: neither elimination, a trace nor hook checks, and the
  // first allocation (which binds the state) is past (the profiler decides the rest:
  // on_alloc_if_inline).
  bool lean_alloc = false;
  // The low end of the bitmap window harvests scan (Profiler::set_space_used_from), as an
  // offset into the region: oneTBB's pool carves each block it takes from the region from the
  // block's top down, so a small heap's objects sit in the top of its first block (richards:
  // the top 320 KiB of 2 MiB) and the rest of the bitmap below them stays zero.
  std::uint64_t used_from = 0;
  static constexpr std::uint64_t kWindowStep = 64 << 10;  // lowered in steps: rare calls
  std::array<Address, kFreeBatch> dead{};
  std::size_t ndead = 0;

  explicit Vm(Options o) : opt(std::move(o)), region(opt.heap_bytes), pool(RawAlloc(this)) {}
};

char* RawAlloc::allocate(std::size_t n) {
  char* p = vm->region.take(n);
  if (p && vm->prof) vm->prof->set_space_used(vm->space_id, vm->region.used());
  return p;
}
void RawAlloc::deallocate(char* p, std::size_t n) { vm->region.give_back(p, n); }

namespace {

// Lowers the harvest window to cover addr before anything can mark it.
inline void cover(Vm& vm, Address addr) {
  const std::uint64_t offset = addr - reinterpret_cast<Address>(vm.region.begin());
  if (offset >= vm.used_from) [[likely]] return;
  vm.used_from = offset & ~(Vm::kWindowStep - 1);
  vm.prof->set_space_used_from(vm.space_id, vm.used_from);
}

// The deaths buffered since the last flush, to the profiler in one call.
void flush_frees(Vm& vm) {
  if (vm.ndead == 0) return;
  vm.prof->on_free_batch(std::span<const Address>(vm.dead.data(), vm.ndead));
  vm.ndead = 0;
}

// One death into the batch; a full batch goes to the profiler.
inline void add_dead(Vm& vm, Address addr) {
  vm.dead[vm.ndead++] = addr;
  if (vm.ndead == Vm::kFreeBatch) [[unlikely]] flush_frees(vm);
}

// Type ids are Lua's variant tags (o->tt).
struct TypeName { int tag; const char* name; };
constexpr TypeName kTypes[] = {
    {LUA_VSHRSTR, "string"}, {LUA_VLNGSTR, "string"},   {LUA_VTABLE, "table"},   {LUA_VLCL, "function"},
    {LUA_VCCL, "function (C)"}, {LUA_VUSERDATA, "userdata"}, {LUA_VTHREAD, "thread"}, {LUA_VUPVAL, "upvalue"},
    {LUA_VPROTO, "prototype"},
};
const char* type_name(int tag) {
  for (const TypeName& t : kTypes)
    if (t.tag == tag) return t.name;
  return "?";
}

constexpr std::uint32_t kCSite = 1;  // allocations with no Lua frame on the stack



// Every Vm of the process; reachable until exit, when the report of a state that was never
// closed (os.exit without close) is printed.
std::vector<Vm*>& all_vms() {
  static auto* vms = new std::vector<Vm*>();
  return *vms;
}

const objprof::BarrierDescriptor& empty_space() {
  static const objprof::BarrierDescriptor d{};  // size 0: the barrier never marks
  return d;
}

void* vm_alloc(void* ud, void* ptr, std::size_t /*osize*/, std::size_t nsize) {
  Vm* vm = static_cast<Vm*>(ud);
  if (nsize == 0) {
    if (ptr) vm->pool.free(ptr);
    return nullptr;
  }
  return ptr ? vm->pool.realloc(ptr, nsize) : vm->pool.malloc(nsize);
}

std::uint32_t intern_site(Vm& vm, std::string where) {
  auto [it, fresh] = vm.site_ids.try_emplace(where, static_cast<std::uint32_t>(vm.site_ids.size() + 1));
  if (fresh) (void)vm.prof->define_site({it->second, 0, std::move(where), objprof::SiteInfo::kNoOffset});
  return it->second;
}

// The site of the instruction `ci` (a Lua frame) is at: per prototype, per pc.
[[gnu::noinline]] std::uint32_t site_at(Vm& vm, CallInfo* ci) {
  const Proto* p = ci_func(ci)->p;
  if (p != vm.last_proto) {
    auto& sites = vm.proto_sites[p];
    if (sites.size() != static_cast<std::size_t>(p->sizecode)) sites.assign(static_cast<std::size_t>(p->sizecode), 0);
    vm.last_proto = p;
    vm.last_sites = &sites;
  }
  const int pc = std::clamp(pcRel(ci->u.l.savedpc, p), 0, std::max(p->sizecode - 1, 0));
  if (vm.last_sites->empty()) return kCSite;
  std::uint32_t& id = (*vm.last_sites)[static_cast<std::size_t>(pc)];
  if (id == 0) {
    char source[LUA_IDSIZE];
    if (p->source) luaO_chunkid(source, getstr(p->source), tsslen(p->source));
    else std::strcpy(source, "?");
    id = intern_site(vm, fmt::format("{}:{}", source, luaG_getfuncline(p, pc)));
  }
  return id;
}

// The site of an allocation: the innermost Lua frame's current line.
std::uint32_t site_of(Vm& vm, lua_State* L) {
  CallInfo* ci = L->ci;
  while (ci != &L->base_ci && !isLua(ci)) ci = ci->previous;
  if (ci == &L->base_ci) return kCSite;
  const Instruction* pc = ci->u.l.savedpc;
  Vm::PcSite& e = vm.pc_sites[Vm::pc_slot(pc)];
  if (e.pc != pc) e = {pc, site_at(vm, ci)};
  return e.site;
}

// A prototype dies: the sites cached for its instructions go (a saved pc lies in
// [code, code + sizecode]), since another prototype's code may take the memory.
void forget_code(Vm& vm, const Proto* p) {
  for (int i = 0; i <= p->sizecode; ++i) {
    Vm::PcSite& e = vm.pc_sites[Vm::pc_slot(p->code + i)];
    if (e.pc == p->code + i) e.pc = nullptr;
  }
}

std::uint64_t footprint(GCObject* o) {
  switch (o->tt) {
    case LUA_VTABLE: {
      const Table* t = gco2t(o);
      return sizeof(Table) + static_cast<std::uint64_t>(luaH_realasize(t)) * sizeof(TValue) +
             (isdummy(t) ? 0 : static_cast<std::uint64_t>(sizenode(t)) * sizeof(Node));
    }
    case LUA_VTHREAD: {
      lua_State* th = gco2th(o);
      return sizeof(lua_State) + std::uint64_t(stacksize(th) + EXTRA_STACK) * sizeof(StackValue);
    }
    default: return 0;
  }
}

}  // namespace

Vm* vm_of(lua_State* L) noexcept {
  Vm* vm = G(L)->objprof.vm;
  return vm && !vm->closed ? vm : nullptr;
}

namespace {

// The metatable's __name of a table or userdata, else its Lua type.
std::string type_label(lua_State* L, GCObject* o) {
  Table* mt = o->tt == LUA_VTABLE ? gco2t(o)->metatable : o->tt == LUA_VUSERDATA ? gco2u(o)->metatable : nullptr;
  if (mt) {
    const TValue* v = luaH_getshortstr(mt, luaS_new(L, "__name"));
    if (ttisstring(v)) return fmt::format("{} ({})", getstr(tsvalue(v)), type_name(o->tt));
  }
  return type_name(o->tt);
}

std::string human_bytes(std::uint64_t b) {
  if (b >= (std::uint64_t{1} << 20)) return fmt::format("{:.1f} MiB", static_cast<double>(b) / (1 << 20));
  if (b >= 1024) return fmt::format("{:.1f} KiB", static_cast<double>(b) / 1024);
  return fmt::format("{} B", b);
}

// The leak report at exit: one line per (site, type), ranked as the profiler ranks its groups:
// by size x idle epochs summed over the group's objects (big and long-forgotten first).
void report(Vm& vm, lua_State* L) {
  if (!vm.opt.report) return;
  const std::vector<objprof::LeakReport> leaks = vm.prof->possible_leaks();
  if (leaks.empty()) return;
  struct Group {
    std::string site, type;
    std::uint64_t bytes = 0, objects = 0, idle = 0, score = 0;
    const objprof::RootPath* path = nullptr;
  };
  std::map<std::pair<std::uint32_t, std::string>, Group> groups;
  std::uint64_t shown = 0;
  for (const objprof::LeakReport& r : leaks) {
    // Objects made with no Lua frame on the stack are the host's set-up (the standard
    // libraries' tables): idle by design, not the program's leaks.
    if (r.site_id == kCSite) continue;
    ++shown;
    std::string type = type_label(L, reinterpret_cast<GCObject*>(r.addr));
    Group& g = groups[{r.site_id, type}];
    g.site = std::string(r.method);
    g.type = std::move(type);
    g.bytes += r.size;
    ++g.objects;
    g.idle = std::max(g.idle, r.epoch - r.last_access_epoch);
    g.score += r.size * (r.epoch - r.last_access_epoch);
    if (!g.path) g.path = r.path;
  }
  if (shown == 0) return;
  std::vector<Group> order;
  for (auto& [key, g] : groups) order.push_back(std::move(g));
  std::stable_sort(order.begin(), order.end(), [](const Group& a, const Group& b) {
    return a.score != b.score ? a.score > b.score : a.bytes > b.bytes;
  });
  std::string out = fmt::format(
      "objprof: {} possible leak{} at exit: objects idle for at least {} GCs, holding at least {} bytes; "
      "most stale bytes first\n",
      shown, shown == 1 ? "" : "s", vm.opt.stale_after, vm.opt.min_size);
  for (const Group& g : order) {
    out += fmt::format("objprof:   {}  {}  {} in {} object{}, idle for {} GCs\n", g.site, g.type, human_bytes(g.bytes),
                       g.objects, g.objects == 1 ? "" : "s", g.idle);
    if (g.path) out += fmt::format("objprof:     path from a root: {}\n", objprof::format_path(*g.path));
  }
  std::fputs(out.c_str(), stderr);
}

// Ends profiling of a state: completes a sweep in progress (so its dead objects are not
// reported), reports, finishes the trace and detaches the hooks.
void close_vm(Vm& vm, lua_State* L) {
  if (vm.closed) return;
  global_State* g = G(L);
  if (issweepphase(g)) luaC_runtilstate(L, bitmask(GCScallfin));
  flush_frees(vm);
  if (vm.prof->in_gc()) (void)vm.prof->gc_end();
  report(vm, L);
  if (objprof::Status s = vm.prof->finish(); !s.ok())
    std::fprintf(stderr, "objprof-lua: the trace is incomplete: %s\n", s.error().message.c_str());
  if (vm.opt.stats && vm.elim) {
    const ElimStats& e = vm.elim->stats();
    auto pct = [](std::uint64_t part, std::uint64_t whole) { return whole ? 100.0 * double(part) / double(whole) : 0.0; };
    std::fprintf(stderr,
                 "objprof: elim: %llu prototypes, %llu instructions, %llu table-access sites, %llu rewritten "
                 "barrier-free (%.1f%%); without root marks %llu (%.1f%%); %llu prototypes left as they were\n",
                 (unsigned long long)e.protos, (unsigned long long)e.instructions, (unsigned long long)e.sites,
                 (unsigned long long)e.rewritten, pct(e.rewritten, e.sites), (unsigned long long)e.removed_exact,
                 pct(e.removed_exact, e.sites), (unsigned long long)e.failed);
  }
#if defined(LUA_OBJPROF_CHECK)
  {
    const GlobalHook& h = g->objprof;
    std::fprintf(stderr, "objprof: check: %llu barriers, %llu accesses without one, %llu violations\n",
                 (unsigned long long)h.barriers, (unsigned long long)h.unbarriered, (unsigned long long)h.violations);
    if (vm.elim) {
      const ElimStats& e = vm.elim->stats();
      std::fprintf(stderr, "objprof: static check: %llu prototypes, %llu accesses on random paths, %llu with a violation\n",
                   (unsigned long long)e.checked, (unsigned long long)e.check_accesses,
                   (unsigned long long)e.check_violations);
    }
  }
#endif
  if (vm.opt.stats) {
    const objprof::ProfilerStats st = vm.prof->stats();
    std::fprintf(stderr,
                 "objprof: stats: %llu GCs (%llu with atomic()'s answers), %llu objects (%llu bytes) allocated, "
                 "%llu tracked, %llu freed, %llu marked granules, heap region used %llu bytes (objects from %llu), "
                 "trace %llu bytes, %llu protocol errors\n",
                 (unsigned long long)st.epoch, (unsigned long long)st.survivor_gcs, (unsigned long long)st.objects_allocated,
                 (unsigned long long)st.bytes_allocated, (unsigned long long)st.objects_tracked,
                 (unsigned long long)st.frees, (unsigned long long)st.bits_harvested,
                 (unsigned long long)vm.region.used(), (unsigned long long)vm.used_from, (unsigned long long)st.trace_bytes,
                 (unsigned long long)st.protocol_errors);
  }
  vm.closed = true;
  g->objprof.prof = nullptr;
  g->objprof.resize_floor = UINT64_MAX;
  copy_space(g->objprof, empty_space());
  g->objprof.root_marks = g->objprof.frame_write_marks = false;
  g->objprof.answers = false;
}

void at_exit() {
  for (Vm* vm : all_vms())
    if (!vm->closed && vm->main) close_vm(*vm, vm->main);
}

Vm* create_vm() {
  auto opt = options_from_environment();
  if (!opt.ok()) {
    std::fprintf(stderr, "objprof-lua: %s\n", opt.error().message.c_str());
    std::exit(2);
  }
  auto vm = std::make_unique<Vm>(std::move(*opt));
  objprof::ProfilerOptions po;
  po.stale_after_epochs = vm->opt.stale_after;
  po.stale_after_bytes = vm->opt.stale_bytes;
  po.min_tracked_size = vm->opt.min_size;
  po.trace_path = vm->opt.trace_path;
  po.fate_reports = vm->opt.fates;
  po.default_leak_printer = false;  // the report at exit groups them (report())
  po.heap_walker = &vm->walker;
#if defined(LUA_OBJPROF_CHECK)
  constexpr std::uint32_t kStaticCheckPaths = 30;  // objprof-lua-check also checks every decision statically
#else
  constexpr std::uint32_t kStaticCheckPaths = 0;
#endif
  if (vm->opt.elim) vm->elim = std::make_unique<ProtoEliminator>(vm->opt.stats, kStaticCheckPaths);
  auto prof = objprof::Profiler::create(std::move(po));
  if (!prof.ok()) {
    std::fprintf(stderr, "objprof-lua: %s\n", prof.error().message.c_str());
    std::exit(2);
  }
  vm->prof = std::move(*prof);
  vm->min_tracked = vm->prof->min_tracked_size();
  vm->every_resize = !vm->opt.trace_path.empty() || vm->prof->options().check_hooks;
  const auto begin = reinterpret_cast<Address>(vm->region.begin());
  auto space = objprof::HeapSpace::make(begin, begin + vm->region.bytes(), std::uint32_t{1} << SpaceCopy::kLog2, "lua");
  if (!space.ok()) {
    std::fprintf(stderr, "objprof-lua: %s\n", space.error().message.c_str());
    std::exit(2);
  }
  vm->space_id = *vm->prof->add_space(*space);
  vm->prof->set_space_used(vm->space_id, 0);  // filled from the start (Region::take)
  vm->used_from = vm->region.bytes();  // and no object yet: cover() lowers the window's low end
  vm->prof->set_space_used_from(vm->space_id, vm->used_from);
  vm->space = &vm->prof->barrier_descriptor(vm->space_id);
  for (const TypeName& t : kTypes) (void)vm->prof->define_type({static_cast<std::uint32_t>(t.tag), t.name, 0, false});
  (void)vm->prof->define_site({kCSite, 0, "[C]", objprof::SiteInfo::kNoOffset});
  vm->site_ids.emplace("[C]", kCSite);
  auto thread = vm->prof->attach_thread(1, "lua");
  if (!thread.ok()) {
    std::fprintf(stderr, "objprof-lua: %s\n", thread.error().message.c_str());
    std::exit(2);
  }
  vm->thread = *thread;
  if (all_vms().empty()) std::atexit(at_exit);
  all_vms().push_back(vm.get());
  return vm.release();
}

}  // namespace

bool incremental_forced(const Vm& vm) noexcept { return vm.opt.gc == GcMode::kIncremental; }

Alloc allocator(Alloc) noexcept { return &vm_alloc; }
void* allocator_ud(void*) { return create_vm(); }

void init(GlobalHook& hook, Alloc frealloc, void* ud, const GCObject* main_thread) noexcept {
  new (&hook.call_slot) objprof::BarrierSlot();  // global_State is raw memory from the allocator
  if (frealloc == &vm_alloc) {
    Vm* vm = static_cast<Vm*>(ud);
    cover(*vm, reinterpret_cast<Address>(main_thread));
    hook.vm = vm;
    hook.prof = vm->prof.get();
    hook.resize_floor = vm->every_resize ? 0 : vm->min_tracked;
    copy_space(hook, *vm->space);
    hook.root_marks = vm->opt.elim;
    hook.frame_write_marks = vm->opt.elim && vm->opt.fault != Options::Fault::kNoFrameWrites;
    hook.upvalue_marks = vm->opt.fault != Options::Fault::kNoUpvalueMarks;
  } else {  // a state with another allocator is not profiled
    hook.vm = nullptr;
    hook.prof = nullptr;
    hook.resize_floor = UINT64_MAX;
    copy_space(hook, empty_space());
    hook.root_marks = hook.frame_write_marks = hook.upvalue_marks = false;
  }
  hook.answers = false;
#if defined(LUA_OBJPROF_CHECK)
  hook.barriers = hook.unbarriered = hook.violations = 0;
#endif
}

namespace {

// The granule of o in the profiled space, as the barrier computes it; false if o lies outside
// it (no barrier marks it either).
bool granule_of(const objprof::BarrierDescriptor& d, const GCObject* o, std::uint64_t& granule) {
  const Address offset = reinterpret_cast<Address>(o) - d.begin;
  if (offset >= d.size) return false;
  granule = offset >> d.log2_granule;
  return true;
}

// Outside atomic(): the bit, as the barrier would set it (without disturbing the cache).
void mark_now(Vm& vm, const GCObject* o) {
  const objprof::BarrierDescriptor& d = *vm.space;
  std::uint64_t granule = 0;
  if (granule_of(d, o, granule))
    objprof::AccessBitmap::mark_granule<objprof::MarkMode::kRacy>(d.bitmap.load(std::memory_order_relaxed), granule);
}

}  // namespace

namespace {

// Everything on_newobj's short path leaves: the first allocation, pending frees, a trace or hook
// checks, an object the tracker may keep, a window to lower, a site not cached, elimination.
[[gnu::noinline]] void newobj_full(Vm* vm, lua_State* L, GCObject* o, std::size_t size) {
  flush_frees(*vm);
  if (!vm->main) {
    vm->main = G(L)->mainthread;
    vm->walker.set_state(vm->main);
    vm->lean_alloc = !vm->elim && !vm->every_resize;
  }
  const auto addr = reinterpret_cast<Address>(o);
  cover(*vm, addr);  // before on_alloc and before the program can access it
  // The site is looked up only where something keeps it: the trace's record, a tracked object,
  // or a table's or thread's `recent` entry (a later resize may make it tracked). Without a
  // trace a small string, closure or upvalue needs none: on_alloc only counts it.
  std::uint32_t site = kCSite;
  if (o->tt == LUA_VTABLE || o->tt == LUA_VTHREAD) {
    site = site_of(*vm, L);
    vm->recent[Vm::recent_slot(addr)] = {addr, site};
  } else if (vm->every_resize || size >= vm->min_tracked) {
    site = site_of(*vm, L);
  }
  vm->prof->on_alloc(*vm->thread, site, o->tt, addr, size);
  // Barrier elimination counts a new table as accessed (ElimOptions::allocation_marks, for
  // OP_NEWTABLE). Only tables: no other new object is an access the pass describes, and
  // strings are most allocations.
  // The bit alone, not the barrier: the cache keeps the object the program last accessed.
  if (o->tt == LUA_VTABLE && vm->elim) mark_now(*vm, o);
}

}  // namespace

// Most allocations are small objects of a program that writes no trace: the profiler only counts
// them (Profiler::on_alloc_if_inline), and a table's or thread's site (the saved pc's cache
// entry) is filed for a later resize. That path makes no call, so it needs no frame of
// callee-saved registers (binary_trees: 89 instructions an allocation before); the rest goes to
// newobj_full.
void on_newobj(lua_State* L, GCObject* o, std::size_t size) {
  Vm* vm = vm_of(L);
  if (!vm) return;
  const auto addr = reinterpret_cast<Address>(o);
  if (vm->lean_alloc && vm->ndead == 0 && addr - reinterpret_cast<Address>(vm->region.begin()) >= vm->used_from)
      [[likely]] {
    if (o->tt != LUA_VTABLE && o->tt != LUA_VTHREAD) {
      if (vm->prof->on_alloc_if_inline(*vm->thread, addr, size)) [[likely]] return;
    } else if (const CallInfo* ci = L->ci; isLua(ci)) {
      const Vm::PcSite& e = vm->pc_sites[Vm::pc_slot(ci->u.l.savedpc)];
      if (e.pc == ci->u.l.savedpc && vm->prof->on_alloc_if_inline(*vm->thread, addr, size)) [[likely]] {
        vm->recent[Vm::recent_slot(addr)] = {addr, e.site};
        return;
      }
    }
  }
  newobj_full(vm, L, o, size);
}

namespace {

// on_free of a thread or a prototype, or outside a bracket.
[[gnu::noinline]] void on_free_slow(Vm& vm, GCObject* o) {
  if (o->tt == LUA_VTHREAD && !vm.roots_at_resume.empty()) vm.roots_at_resume.erase(gco2th(o));
  if (o->tt == LUA_VPROTO) {  // a later prototype may reuse the address, and its code the code's
    forget_code(vm, gco2p(o));
    vm.proto_sites.erase(gco2p(o));
    vm.last_proto = nullptr;
  }
  const auto addr = reinterpret_cast<Address>(o);
  if (!vm.prof->in_gc()) {  // the profiler says why this free is refused, now
    vm.prof->on_free(addr);
    return;
  }
  add_dead(vm, addr);
}

}  // namespace

// A free the inline hook (free_hook) did not report: a thread or a prototype, whose deaths the
// glue itself follows; any free while a trace or hook checks are on (the profiler's hooks are
// out of line then), which is a store into the batch; a free outside a bracket. A dead table's
// `recent` entry stays: only a table or thread reads it (on_resize), and a new one at the same
// address writes its own at creation.
void on_free(lua_State* L, GCObject* o) {
  Vm* vm = vm_of(L);
  if (!vm) return;
  if (o->tt == LUA_VTHREAD || o->tt == LUA_VPROTO || !vm->prof->in_gc()) [[unlikely]] {
    on_free_slow(*vm, o);
    return;
  }
  add_dead(*vm, reinterpret_cast<Address>(o));
}

namespace {

// A footprint the stale tracker keeps: it needs the object's site.
[[gnu::noinline]] void report_resize(Vm& vm, lua_State* L, GCObject* o, std::uint64_t bytes) {
  const auto addr = reinterpret_cast<Address>(o);
  const Vm::RecentSite& recent = vm.recent[Vm::recent_slot(addr)];
  const std::uint32_t site = recent.addr == addr ? recent.site : site_of(vm, L);
  vm.prof->on_resize(*vm.thread, addr, bytes, site, o->tt);
}

// A footprint only the trace (or the hook checks) wants: no site. Out of line, so that
// on_resize's usual exit keeps a frame without callee-saved registers.
[[gnu::noinline]] void record_resize(Vm& vm, GCObject* o, std::uint64_t bytes) {
  vm.prof->on_resize(*vm.thread, reinterpret_cast<Address>(o), bytes, 0, o->tt);
}

}  // namespace

// Most resizes are a small table's first (a constructor's): without a trace or hook checks
// they end at the footprint; with them, a footprint the tracker ignores needs no site, and its
// record is written here, without report_resize's frame.
void on_resize(lua_State* L, GCObject* o) {
  Vm* vm = vm_of(L);
  if (!vm || o == obj2gco(G(L)->mainthread)) return;  // the main thread is not a heap object
  const std::uint64_t bytes = footprint(o);
  if (bytes < vm->min_tracked) {
    if (vm->every_resize) record_resize(*vm, o, bytes);
    return;
  }
  report_resize(*vm, L, o, bytes);
}

void on_gc_begin(lua_State* L) {
  Vm* vm = vm_of(L);
  if (!vm) return;
  flush_frees(*vm);
  if (vm->prof->in_gc()) (void)vm->prof->gc_end();  // never two brackets at once
  const auto kind = G(L)->gckind == KGC_GEN ? objprof::GcKind::kMinor : objprof::GcKind::kConcurrent;
  if (objprof::Status s = vm->prof->gc_begin(kind); !s.ok())
    std::fprintf(stderr, "objprof-lua: %s\n", s.error().message.c_str());
  reset_caches(G(L)->objprof);  // the bitmap was cleared: the next access must mark again
  copy_space(G(L)->objprof, *vm->space);  // and the active buffer is the other one now
  // This collection's tracked objects' fates come from atomic()'s answers (on_survivors), not
  // from the sweep's frees, which then skip the profiler (free_hook).
  G(L)->objprof.answers = vm->prof->in_gc() && !vm->prof->wants_object_events();
}

namespace {

// After atomic() flipped the current white, an object of the cycle is dead if it still has the
// other (old) white: Lua's own isdead. Lua never moves an object, so a survivor stays put.
class LuaSurvivors final : public objprof::SurvivorOracle {
 public:
  explicit LuaSurvivors(global_State* g) : g_(g) {}
  void survivors(std::span<const Address> pre_gc, std::span<Address> post_gc) const noexcept override {
    for (std::size_t i = 0; i < pre_gc.size(); ++i) {
      const GCObject* o = reinterpret_cast<const GCObject*>(pre_gc[i]);
      post_gc[i] = isdead(g_, o) ? 0 : pre_gc[i];
    }
  }

 private:
  global_State* g_;
};

}  // namespace

void on_survivors(lua_State* L) {
  Vm* vm = vm_of(L);
  if (!vm || !G(L)->objprof.answers) return;
  vm->prof->report_survivors(LuaSurvivors(G(L)));
}

void on_gc_end(lua_State* L) {
  Vm* vm = vm_of(L);
  // The end of a sweep that no atomic() started (a full collection first sweeps everything
  // back to white) closes nothing.
  if (!vm || !vm->prof->in_gc()) return;
  flush_frees(*vm);
  G(L)->objprof.answers = false;  // frees outside a collection's bracket go to the profiler
  if (objprof::Status s = vm->prof->gc_end(); !s.ok())
    std::fprintf(stderr, "objprof-lua: %s\n", s.error().message.c_str());
  // Lua's collector does not move objects, but a sweep freed some: a cached address may belong
  // to a new object now, whose first access must mark.
  reset_caches(G(L)->objprof);
}

void on_close(lua_State* L) {
  if (Vm* vm = vm_of(L)) close_vm(*vm, L);
}

void on_newproto(lua_State* L, Proto* p) {
  Vm* vm = vm_of(L);
  if (!vm || !vm->elim) return;
  try {
    vm->elim->run(p);
  } catch (const std::bad_alloc&) {
    // Out of memory in the pass: the prototypes not yet rewritten keep their barriers.
  }
}

namespace {

// Calls mark(object) for every collectable value in th's registers.
template <class Mark>
void for_each_register(lua_State* th, Mark&& mark) {
  for (StkId o = th->stack; o < th->top; ++o)
    if (iscollectable(s2v(o))) mark(gcvalue(s2v(o)));
}

// Calls mark(object) for the value of every upvalue of every Lua frame of th.
template <class Mark>
void for_each_frame_upvalue(lua_State* th, Mark&& mark) {
  for (CallInfo* ci = th->ci; ci != nullptr && ci != &th->base_ci; ci = ci->previous) {
    if (!isLua(ci)) continue;
    const LClosure* cl = clLvalue(s2v(ci->func));
    for (int k = 0; k < cl->nupvalues; ++k)
      if (cl->upvals[k] != nullptr && iscollectable(cl->upvals[k]->v)) mark(gcvalue(cl->upvals[k]->v));
  }
}

}  // namespace

// Root marks. A frame's registers, and the upvalues its closure reads, must be marked in every
// epoch in which the frame runs (an access the pass made barrier-free may follow). The running
// thread, and every other thread that is not a suspended coroutine (a coroutine that resumed
// another, a thread a C function calls into), may run right after atomic(): marked now. A
// suspended coroutine runs again only through lua_resume: marked there, if it ever is.
void on_stackroots(global_State* g, lua_State* th) {
  Vm* vm = g->objprof.vm;
  if (!vm || vm->closed) return;
  if (th->status == LUA_YIELD) {
    vm->roots_at_resume.insert(th);
    return;
  }
  auto root = [&](const GCObject* o) { vm->prof->on_root(reinterpret_cast<Address>(o)); };
  if (vm->opt.fault != Options::Fault::kNoRootMarks) for_each_register(th, root);
  if (g->objprof.upvalue_marks) for_each_frame_upvalue(th, root);
}

// A thread runs again after other threads ran: they may have written the registers that its
// closures' open upvalues point to (their own locals, written without a mark), so the values
// its frames' upvalues hold now are marked. Its own registers change only through marked
// writes, but may be owed their root marks (a GC came while it was suspended).
void on_resume(lua_State* L) {
  Vm* vm = vm_of(L);
  if (!vm) return;
  auto mark = [&](const GCObject* o) { mark_now(*vm, o); };
  if (!vm->roots_at_resume.empty() && vm->roots_at_resume.erase(L) != 0 && vm->opt.fault != Options::Fault::kNoRootMarks)
    for_each_register(L, mark);
  if (G(L)->objprof.upvalue_marks) for_each_frame_upvalue(L, mark);
}

void on_resumed(lua_State* from) {
  Vm* vm = vm_of(from);
  if (vm && G(from)->objprof.upvalue_marks) for_each_frame_upvalue(from, [&](const GCObject* o) { mark_now(*vm, o); });
}

void on_framewrite(lua_State* L, const TValue* v) {
  if (vm_of(L)) access(G(L)->objprof, gcvalue(v));
}

void check_unbarriered(lua_State* L, const GCObject* o) {
#if defined(LUA_OBJPROF_CHECK)
  GlobalHook& hook = G(L)->objprof;
  ++hook.unbarriered;
  Vm* vm = vm_of(L);
  if (!vm) return;
  const objprof::BarrierDescriptor& d = *vm->space;
  std::uint64_t granule = 0;
  if (!granule_of(d, o, granule)) return;  // not in the profiled space: no barrier would mark it either
  const std::uint8_t* bits = d.bitmap.load(std::memory_order_relaxed);
  if ((bits[granule >> 3] >> (granule & 7)) & 1) return;
  if (++hook.violations <= 5) {
    const CallInfo* ci = L->ci;
    const Proto* p = isLua(ci) ? ci_func(ci)->p : nullptr;
    std::fprintf(stderr, "objprof-lua-check: violation: a %s at %p accessed without a barrier in the function at %s:%d (0: the main chunk), not marked in epoch %llu\n",
                 type_name(o->tt), static_cast<const void*>(o), p && p->source ? getstr(p->source) : "?",
                 p ? p->linedefined : 0, (unsigned long long)vm->prof->epoch());
  }
#else
  (void)L;
  (void)o;
#endif
}

}  // namespace objprof_lua

// lua.c of objprof-lua calls this instead of lua_gc (compiled with -Dlua_gc=objprof_lua_gc):
// lua.c switches the collector to generational mode at start-up, as stock lua5.4 does, and
// objprof-lua's --gc=incremental keeps Lua's incremental collector instead. lua.c passes at
// most two arguments after `what`.
extern "C" int objprof_lua_gc(lua_State* L, int what, ...) {
  objprof_lua::Vm* vm = objprof_lua::vm_of(L);
  if (what == LUA_GCGEN && vm && vm->opt.gc == objprof_lua::GcMode::kIncremental) return lua_gc(L, LUA_GCINC, 0, 0, 0);
  if (what == LUA_GCINC && vm && vm->opt.gc == objprof_lua::GcMode::kGenerational) return lua_gc(L, LUA_GCGEN, 0, 0);
  std::va_list ap;
  va_start(ap, what);
  int r = 0;
  switch (what) {
    case LUA_GCGEN: {
      const int a = va_arg(ap, int);
      const int b = va_arg(ap, int);
      r = lua_gc(L, what, a, b);
      break;
    }
    case LUA_GCSTEP:
    case LUA_GCSETPAUSE:
    case LUA_GCSETSTEPMUL: r = lua_gc(L, what, va_arg(ap, int)); break;
    default: r = lua_gc(L, what); break;
  }
  va_end(ap);
  return r;
}
