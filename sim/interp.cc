// The IR interpreter. Functions are decoded once into a flat array of instructions with
// resolved field slots, type ids, callees, branch targets and the pass's barrier decisions;
// the dispatch loop is instantiated once per barrier policy (with_barrier_policy), so the
// barrier on each kept access is the same inline sequence compiled code would run.
#include "interp.h"

#include <objprof/ir/text.h>

#include <fmt/core.h>

#include <map>
#include <mutex>
#include <optional>
#include <thread>

namespace objprof::sim {

namespace {

enum class Builtin : std::int32_t { kParam, kRand, kStaticGet, kStaticSet, kStaticInit, kGc, kCheck, kThread, kThreads, kProgress };

struct BuiltinDef {
  const char* name;
  Builtin id;
  std::uint32_t arity;
};
constexpr BuiltinDef kBuiltins[] = {
    {"sys.param", Builtin::kParam, 0},          {"sys.rand", Builtin::kRand, 1},
    {"sys.static_get", Builtin::kStaticGet, 1}, {"sys.static_set", Builtin::kStaticSet, 2},
    {"sys.static_init", Builtin::kStaticInit, 2},
    {"sys.gc", Builtin::kGc, 0},                {"sys.check", Builtin::kCheck, 1},
    {"sys.thread", Builtin::kThread, 0},        {"sys.threads", Builtin::kThreads, 0},
    {"sys.progress", Builtin::kProgress, 1},
};
constexpr std::uint32_t kNumStatics = 256;

using Decoded = DecodedInstr;  // callee < 0: -(builtin + 1)

struct DecodedFunction {
  const ir::Function* ir = nullptr;
  std::vector<Decoded> code;
  CompiledFunction compiled;  // entry null: interpreted
};

struct Frame {
  std::vector<Value> regs;
  const ir::Function* fn = nullptr;  // for root names (paths from roots)
};

struct ThreadCtx final : RootProvider {
  Interpreter::Impl* im = nullptr;
  std::uint32_t tid = 0;
  Mutator m;
  std::vector<Frame*> frames;
  std::uint64_t rng = 0;
  std::uint32_t depth = 0;
  std::uint64_t instructions = 0, accesses = 0, barriers = 0, elided = 0;
  std::uint64_t gc_visits = 0;  // collections that scanned this thread (a `.nogc` check of compiled code)
  // InterpOptions::profile_cache: the cache as if every kept site compared and stored, with the
  // C++ barrier's rules: a hit when the object equals the cache (null too, while the cache is
  // empty), a store only for an object in the heap (not null). A GC empties it (the profiler
  // resets every thread's cache), seen as a change of gc_visits.
  struct {
    Address object = 0;
    std::uint32_t site = 0;
    std::uint64_t visits = 0;
    CacheProfile counts;
  } cache_sim;
  void profile_cache(std::uint32_t site, Address obj) {
    auto& c = cache_sim;
    if (c.visits != gc_visits) {
      c.object = 0;
      c.visits = gc_visits;
    }
    ++c.counts.executed[site];
    if (obj == c.object) {
      ++c.counts.hits[site];
      if (obj == 0) ++c.counts.unproduced_hits;
      else ++c.counts.fed[{c.site, site}];
      return;
    }
    if (obj == 0) return;
    c.object = obj;
    c.site = site;
  }
  std::optional<Error> error;   // set by rt:: calls that fail; compiled code then returns 1
  void visit_roots(const RootFn& fn) override {
    ++gc_visits;
    for (Frame* f : frames)
      for (Value& v : f->regs)
        if (v.ref && v.v != 0) fn(v.v);
  }
  // Token: frame index from the outermost << 24 | register.
  void visit_named_roots(const NamedRootFn& fn) override {
    for (std::size_t fi = 0; fi < frames.size(); ++fi)
      for (std::size_t r = 0; r < frames[fi]->regs.size(); ++r)
        if (const Value& v = frames[fi]->regs[r]; v.ref && v.v != 0) fn(RootKind::kStackFrame, (fi << 24) | r, v.v);
  }
  std::string root_name(RootKind, std::uint64_t token) const override;
};

// Static slots, shared by every thread. A mutex orders them (statics are rare next to field
// accesses); the collector visits them with the world stopped, when no mutator holds it.
struct Statics final : RootProvider {
  std::mutex mu;
  std::vector<Value> slots = std::vector<Value>(kNumStatics);
  void visit_roots(const RootFn& fn) override {
    std::lock_guard lk(mu);
    for (Value& s : slots)
      if (s.ref && s.v != 0) fn(s.v);
  }
  void visit_named_roots(const NamedRootFn& fn) override {
    std::lock_guard lk(mu);
    for (std::size_t i = 0; i < slots.size(); ++i)
      if (slots[i].ref && slots[i].v != 0) fn(RootKind::kStatic, i, slots[i].v);
  }
  std::string root_name(RootKind, std::uint64_t token) const override { return fmt::format("static {}", token); }
};

std::uint64_t splitmix(std::uint64_t& s) {
  std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

struct Interpreter::Impl {
  const ir::Module* module = nullptr;
  Heap* heap = nullptr;
  Profiler* profiler = nullptr;
  const BarrierDescriptor* desc = nullptr;
  InterpOptions opt;
  std::vector<DecodedFunction> fns;
  std::map<std::string, std::int32_t> fn_index;
  std::map<std::string, std::uint32_t> class_types;  // IR type name -> sim type id
  std::map<std::string, std::uint32_t> array_types;  // element name -> sim type id
  Statics statics;
  InterpStats totals;
  std::mutex stats_mu;
  std::vector<CacheSiteKey> cache_sites;  // kept barrier sites in decode order (DecodedInstr::site)
  CacheProfile cache_profile;             // InterpOptions::profile_cache, merged as threads end

  ~Impl() {
    if (heap) heap->remove_root_provider(&statics);
  }

  Status decode();
  Status apply_cache_plan(const CachePlan& plan);
  Result<std::uint32_t> array_type(const std::string& elem);
  Error fail(const DecodedFunction& f, const Decoded& d, const std::string& what) const {
    return make_error(ErrorCode::kInvalidArgument,
                      fmt::format("{} in {}: `{}`", what, f.ir->name, ir::print_instr(*f.ir, *d.src)));
  }

  template <class P>
  Result<Value> exec(ThreadCtx& t, std::int32_t fi, const Value* args, std::size_t nargs, bool may_compile = true);
  Result<Value> call_builtin(ThreadCtx& t, const DecodedFunction& f, const Decoded& d, Builtin b, const Value* R);
  Result<Value> allocate(ThreadCtx& t, const DecodedFunction& f, const Decoded& d, const Value* R);
  // The error the interpreter reports for `d` with operands R (compiled code's failed checks).
  Error diagnose(const DecodedFunction& f, const Decoded& d, const Value* R);
  // exec<P> for the run's barrier policy, so rt::call can re-enter the dispatch.
  Result<Value> (*exec_any)(Impl& im, ThreadCtx& t, std::int32_t fi, const Value* args, std::size_t nargs) = nullptr;
};

// "thread listleak-0 frame 1 (main) v3": frames counted from the innermost, as stack traces do.
std::string ThreadCtx::root_name(RootKind, std::uint64_t token) const {
  const std::size_t fi = token >> 24, reg = token & 0xFF'FFFF;
  const std::string thread = fmt::format("{}-{}", im->opt.module_name, tid);
  if (fi >= frames.size()) return fmt::format("thread {} frame ? v{}", thread, reg);
  const ir::Function* fn = frames[fi]->fn;
  return fmt::format("thread {} frame {} ({}) v{}", thread, frames.size() - 1 - fi, fn ? fn->name : "?", reg);
}

Result<std::uint32_t> Interpreter::Impl::array_type(const std::string& elem) {
  if (auto it = array_types.find(elem); it != array_types.end()) return it->second;
  SimType t;
  t.name = elem + "[]";
  t.is_array = true;
  t.elem_is_ref = elem == "ref" || class_types.count(elem) != 0;
  auto id = heap->add_type(std::move(t));
  if (!id.ok()) return id.error();
  array_types[elem] = *id;
  return *id;
}

Status Interpreter::Impl::decode() {
  for (const ir::Type& ty : module->types) {
    SimType t;
    t.name = ty.name;
    for (const ir::Field& f : ty.fields) {
      t.field_names.push_back(f.name);
      t.slot_is_ref.push_back(f.is_ref() ? 1 : 0);
    }
    auto id = heap->add_type(std::move(t));
    if (!id.ok()) return id.error();
    class_types[ty.name] = *id;
  }
  for (std::size_t i = 0; i < module->functions.size(); ++i)
    fn_index[module->functions[i].name] = static_cast<std::int32_t>(i);
  ir::ElimOptions eo;
  eo.pass = opt.pass;
  eo.safepoints = ir::SafepointMode::kExact;
  eo.allocation_marks = opt.allocation_marks;
  eo.roots_marked = opt.roots_marked;
  std::uint32_t next_site = 1;
  fns.resize(module->functions.size());
  for (std::size_t fi = 0; fi < module->functions.size(); ++fi) {
    const ir::Function& f = module->functions[fi];
    auto elim = ir::run_elim(f, eo, module);
    if (!elim.ok()) return elim.error();
    DecodedFunction& df = fns[fi];
    df.ir = &f;
    std::vector<std::uint32_t> block_start;
    std::uint32_t pc = 0;
    for (const ir::Block& b : f.blocks) {
      block_start.push_back(pc);
      pc += static_cast<std::uint32_t>(b.instrs.size());
    }
    for (ir::BlockId bi = 0; bi < f.blocks.size(); ++bi) {
      const ir::Block& blk = f.blocks[bi];
      for (std::uint32_t ii = 0; ii < blk.instrs.size(); ++ii) {
        const ir::Instr& in = blk.instrs[ii];
        Decoded d;
        d.src = &in;
        d.op = in.op;
        d.sub = in.subop;
        d.dst = in.dst;
        d.imm = in.imm;
        if (in.args.size() > 0) d.a = in.args[0];
        if (in.args.size() > 1) d.b = in.args[1];
        if (in.args.size() > 2) d.c = in.args[2];
        for (ir::BlockId tgt : in.targets) d.targets.push_back(block_start[tgt]);
        if (!d.targets.empty()) d.t0 = d.targets[0];
        if (d.targets.size() > 1) d.t1 = d.targets[1];
        const std::uint32_t linear = block_start[bi] + ii;
        if (ir::is_access(in.op)) {
          ++totals.static_sites;
          for (unsigned o = 0; o < ir::num_accesses(in); ++o)
            if (elim->kept(bi, ii, o)) {
              d.kept |= static_cast<std::uint8_t>(1u << o);
              d.site[o] = static_cast<std::uint32_t>(cache_sites.size());
              cache_sites.push_back({static_cast<std::uint32_t>(fi), linear, static_cast<std::uint8_t>(o)});
            }
          if (d.kept) ++totals.static_kept;
        }
        switch (in.op) {
          case ir::Opcode::kNew: {
            auto it = class_types.find(in.type);
            if (it == class_types.end())
              return make_error(ErrorCode::kInvalidArgument, fmt::format("{}: new of unknown type '{}'", f.name, in.type));
            d.type = it->second;
            break;
          }
          case ir::Opcode::kNewArray: {
            auto id = array_type(in.type);
            if (!id.ok()) return id.error();
            d.type = *id;
            break;
          }
          case ir::Opcode::kGetField:
          case ir::Opcode::kPutField: {
            const ir::Type* ty = module->find_type(in.type);
            if (!ty) return make_error(ErrorCode::kInvalidArgument, fmt::format("{}: unknown type '{}'", f.name, in.type));
            std::uint32_t slot = 0;
            for (; slot < ty->fields.size() && ty->fields[slot].name != in.name; ++slot) {
            }
            if (slot == ty->fields.size())
              return make_error(ErrorCode::kInvalidArgument, fmt::format("{}: unknown field {}.{}", f.name, in.type, in.name));
            d.slot = slot;
            d.field_ref = ty->fields[slot].is_ref();
            d.type = class_types[in.type];
            break;
          }
          case ir::Opcode::kInvoke:
          case ir::Opcode::kCallStatic: {
            d.args.assign(in.args.begin(), in.args.end());
            if (auto it = fn_index.find(in.name); it != fn_index.end()) {
              d.callee = it->second;
              const auto& params = module->functions[static_cast<std::size_t>(d.callee)].params;
              if (params.size() != in.args.size())
                return make_error(ErrorCode::kInvalidArgument,
                                  fmt::format("{}: {} takes {} arguments, called with {}", f.name, in.name,
                                              params.size(), in.args.size()));
              break;
            }
            bool found = false;
            for (const BuiltinDef& b : kBuiltins) {
              if (in.name != b.name) continue;
              if (in.op == ir::Opcode::kInvoke || b.arity != in.args.size())
                return make_error(ErrorCode::kInvalidArgument,
                                  fmt::format("{}: builtin {} takes {} arguments (use `call`)", f.name, b.name, b.arity));
              d.callee = -(static_cast<std::int32_t>(b.id) + 1);
              found = true;
            }
            if (!found)
              return make_error(ErrorCode::kInvalidArgument, fmt::format("{}: call of unknown function '{}'", f.name, in.name));
            break;
          }
          default:
            break;
        }
        if (in.op == ir::Opcode::kNew || in.op == ir::Opcode::kNewArray) {
          d.alloc_site = next_site++;
          if (profiler) {
            SiteInfo si;
            si.id = d.alloc_site;
            si.pc = (static_cast<std::uint64_t>(fi + 1) << 32) | linear;
            si.method = f.name;
            si.bytecode_offset = linear;
            OBJPROF_RETURN_IF_ERROR(profiler->define_site(si));
          }
        }
        df.code.push_back(std::move(d));
      }
    }
  }
  return {};
}

Result<Value> Interpreter::Impl::call_builtin(ThreadCtx& t, const DecodedFunction& f, const Decoded& d, Builtin b,
                                              const Value* R) {
  auto arg = [&](std::size_t i) { return R[d.args[i]]; };
  switch (b) {
    case Builtin::kParam: return Value{opt.size, false};
    case Builtin::kThread: return Value{t.tid, false};
    case Builtin::kThreads: return Value{opt.threads, false};
    case Builtin::kRand: {
      const auto bound = static_cast<std::int64_t>(arg(0).v);
      if (bound <= 0) return fail(f, d, fmt::format("sys.rand bound {} is not positive", bound));
      return Value{splitmix(t.rng) % static_cast<std::uint64_t>(bound), false};
    }
    case Builtin::kStaticGet:
    case Builtin::kStaticSet:
    case Builtin::kStaticInit: {
      const std::uint64_t i = arg(0).v;
      if (arg(0).ref || i >= kNumStatics)
        return fail(f, d, fmt::format("static index {} out of range (0..{})", i, kNumStatics - 1));
      std::lock_guard lk(statics.mu);
      Value& s = statics.slots[i];
      if (b == Builtin::kStaticGet) return s;
      if (b == Builtin::kStaticSet) {
        s = arg(1);
        return Value{};
      }
      if (s.v == 0) s = arg(1);  // sys.static_init: first writer wins, everyone gets its value
      return s;
    }
    case Builtin::kGc: {
      auto st = heap->collect(t.m);
      if (!st.ok()) return st.error();
      return Value{};
    }
    case Builtin::kCheck:
      if (arg(0).v == 0) return fail(f, d, "sys.check failed");
      return Value{};
    case Builtin::kProgress:
      if (opt.on_progress) opt.on_progress(t.tid, static_cast<std::int64_t>(arg(0).v));
      return Value{};
  }
  return Value{};
}

Result<Value> Interpreter::Impl::allocate(ThreadCtx& t, const DecodedFunction& f, const Decoded& d, const Value* R) {
  std::uint64_t len = 0;
  if (d.op == ir::Opcode::kNewArray) {
    if (R[d.a].ref) return fail(f, d, "array length is a reference");
    if (static_cast<std::int64_t>(R[d.a].v) < 0)
      return fail(f, d, fmt::format("negative array length {}", static_cast<std::int64_t>(R[d.a].v)));
    len = R[d.a].v;
  }
  auto a = heap->allocate(t.m, d.alloc_site, d.type, len);
  if (!a.ok()) return fail(f, d, a.error().message);
  return Value{*a, true};
}

template <class P>
Result<Value> Interpreter::Impl::exec(ThreadCtx& t, std::int32_t fi, const Value* args, std::size_t nargs,
                                      bool may_compile) {
  const DecodedFunction& f = fns[static_cast<std::size_t>(fi)];
  if (t.depth >= opt.max_depth)
    return make_error(ErrorCode::kOutOfRange, fmt::format("call depth above {} entering {}", opt.max_depth, f.ir->name));
  Frame frame;
  frame.fn = f.ir;
  frame.regs.assign(f.ir->num_regs, Value{});
  for (std::size_t i = 0; i < nargs && i < f.ir->params.size(); ++i) frame.regs[f.ir->params[i]] = args[i];
  struct Push {
    ThreadCtx& t;
    Push(ThreadCtx& tc, Frame* fr) : t(tc) {
      t.frames.push_back(fr);
      ++t.depth;
    }
    ~Push() {
      t.frames.pop_back();
      --t.depth;
    }
  } push(t, &frame);
  Value* R = frame.regs.data();
  ThreadState* ts = t.m.thread;
  const bool profiling = opt.profile_cache;
  if (may_compile && f.compiled.entry) {
    Value ret;
    if (f.compiled.entry(&t, R, &ret, ts) == 0) return ret;
    if (!t.error) return make_error(ErrorCode::kProtocol, "compiled code of " + f.ir->name + " failed without an error");
    Error e = std::move(*t.error);
    t.error.reset();
    return e;
  }
  auto barrier = [&](const Decoded& d, unsigned operand, Address obj) {
    ++t.accesses;
    if (!(d.kept >> operand & 1)) {
      ++t.elided;
      return;
    }
    ++t.barriers;
    if (profiling) t.profile_cache(d.site[operand], obj);
    if (!ts || !desc) return;
    if constexpr (P::kCache) {
      switch (d.cache_use[operand]) {
        case CacheUse::kCompare: access<P>(*ts, *desc, obj); return;
        case CacheUse::kStore: access<BarrierPolicy<true, P::kMark, P::kCount, false>>(*ts, *desc, obj); return;
        case CacheUse::kNone: access<BarrierPolicy<false, P::kMark, P::kCount>>(*ts, *desc, obj); return;
      }
    }
    access<P>(*ts, *desc, obj);
  };
  auto object = [&](const Decoded& d, ir::Reg r, const char* what) -> Result<Address> {
    const Value& v = R[r];
    if (!v.ref) return fail(f, d, fmt::format("{} of a scalar register v{}", what, r));
    if (v.v == 0) return fail(f, d, fmt::format("null reference in {} (v{})", what, r));
    return static_cast<Address>(v.v);
  };
  std::vector<Value> call_args;
  std::uint32_t pc = 0;
  for (;;) {
    const Decoded& d = f.code[pc];
    ++t.instructions;
    ++pc;
    switch (d.op) {
      case ir::Opcode::kConst: R[d.dst] = Value{static_cast<std::uint64_t>(d.imm), false}; break;
      case ir::Opcode::kNull: R[d.dst] = Value{0, true}; break;
      case ir::Opcode::kMove: R[d.dst] = R[d.a]; break;
      case ir::Opcode::kBinary: {
        const auto x = static_cast<std::int64_t>(R[d.a].v), y = static_cast<std::int64_t>(R[d.b].v);
        if (R[d.a].ref || R[d.b].ref) return fail(f, d, "arithmetic on a reference");
        std::int64_t r = 0;
        switch (static_cast<ir::BinaryOp>(d.sub)) {
          case ir::BinaryOp::kAdd: r = static_cast<std::int64_t>(static_cast<std::uint64_t>(x) + static_cast<std::uint64_t>(y)); break;
          case ir::BinaryOp::kSub: r = static_cast<std::int64_t>(static_cast<std::uint64_t>(x) - static_cast<std::uint64_t>(y)); break;
          case ir::BinaryOp::kMul: r = static_cast<std::int64_t>(static_cast<std::uint64_t>(x) * static_cast<std::uint64_t>(y)); break;
          case ir::BinaryOp::kDiv:
          case ir::BinaryOp::kRem:
            if (y == 0) return fail(f, d, "division by zero");
            if (y == -1) r = d.sub == static_cast<std::uint8_t>(ir::BinaryOp::kDiv) ? static_cast<std::int64_t>(0 - static_cast<std::uint64_t>(x)) : 0;
            else r = d.sub == static_cast<std::uint8_t>(ir::BinaryOp::kDiv) ? x / y : x % y;
            break;
          case ir::BinaryOp::kAnd: r = x & y; break;
          case ir::BinaryOp::kOr: r = x | y; break;
          case ir::BinaryOp::kXor: r = x ^ y; break;
          case ir::BinaryOp::kShl: r = static_cast<std::int64_t>(static_cast<std::uint64_t>(x) << (y & 63)); break;
          case ir::BinaryOp::kShr: r = x >> (y & 63); break;
        }
        R[d.dst] = Value{static_cast<std::uint64_t>(r), false};
        break;
      }
      case ir::Opcode::kCompare: {
        const auto x = static_cast<std::int64_t>(R[d.a].v), y = static_cast<std::int64_t>(R[d.b].v);
        bool r = false;
        switch (static_cast<ir::CompareOp>(d.sub)) {
          case ir::CompareOp::kLt: r = x < y; break;
          case ir::CompareOp::kLe: r = x <= y; break;
          case ir::CompareOp::kGt: r = x > y; break;
          case ir::CompareOp::kGe: r = x >= y; break;
          case ir::CompareOp::kEq: r = x == y; break;
          case ir::CompareOp::kNe: r = x != y; break;
        }
        R[d.dst] = Value{r ? 1u : 0u, false};
        break;
      }
      case ir::Opcode::kNew:
      case ir::Opcode::kNewArray: {
        auto a = allocate(t, f, d, R);
        if (!a.ok()) return a.error();
        R[d.dst] = *a;
        break;
      }
      case ir::Opcode::kGetField:
      case ir::Opcode::kPutField: {
        auto o = object(d, d.a, d.op == ir::Opcode::kGetField ? "getfield" : "putfield");
        if (!o.ok()) return o.error();
        if (Heap::header(*o).type != d.type)
          return fail(f, d, fmt::format("object is a {}, not a {}", heap->type_of(*o).name, heap->type(d.type).name));
        barrier(d, 0, *o);
        if (d.op == ir::Opcode::kGetField) {
          R[d.dst] = Value{Heap::load(*o, d.slot), d.field_ref};
        } else {
          const Value& v = R[d.b];
          if (v.ref != d.field_ref && !(d.field_ref && v.v == 0))
            return fail(f, d, d.field_ref ? "storing a scalar in a reference field" : "storing a reference in a scalar field");
          Heap::store(*o, d.slot, v.v);
        }
        break;
      }
      case ir::Opcode::kArrayGet:
      case ir::Opcode::kArrayPut:
      case ir::Opcode::kArrayLength: {
        auto o = object(d, d.a, "array access");
        if (!o.ok()) return o.error();
        const SimType& ty = heap->type_of(*o);
        if (!ty.is_array) return fail(f, d, fmt::format("object is a {}, not an array", ty.name));
        barrier(d, 0, *o);
        const std::uint64_t n = Heap::header(*o).word;
        if (d.op == ir::Opcode::kArrayLength) {
          R[d.dst] = Value{n, false};
          break;
        }
        const std::uint64_t i = R[d.b].v;
        if (R[d.b].ref || i >= n)
          return fail(f, d, fmt::format("index {} out of bounds for length {}", static_cast<std::int64_t>(i), n));
        if (d.op == ir::Opcode::kArrayGet) {
          R[d.dst] = Value{Heap::load(*o, i), ty.elem_is_ref};
        } else {
          const Value& v = R[d.c];
          if (v.ref != ty.elem_is_ref && !(ty.elem_is_ref && v.v == 0))
            return fail(f, d, ty.elem_is_ref ? "storing a scalar in a reference array" : "storing a reference in a scalar array");
          Heap::store(*o, i, v.v);
        }
        break;
      }
      case ir::Opcode::kMonitorEnter:
      case ir::Opcode::kMonitorExit: {
        auto o = object(d, d.a, "monitor");
        if (!o.ok()) return o.error();
        barrier(d, 0, *o);
        break;
      }
      case ir::Opcode::kRefEqual:
        barrier(d, 0, static_cast<Address>(R[d.a].v));
        barrier(d, 1, static_cast<Address>(R[d.b].v));
        R[d.dst] = Value{R[d.a].v == R[d.b].v ? 1u : 0u, false};
        break;
      case ir::Opcode::kInvoke:
      case ir::Opcode::kCallStatic: {
        if (d.op == ir::Opcode::kInvoke) {
          auto o = object(d, d.a, "invoke receiver");
          if (!o.ok()) return o.error();
          barrier(d, 0, *o);
        }
        Result<Value> r = Value{};
        if (d.callee < 0) {
          r = call_builtin(t, f, d, static_cast<Builtin>(-d.callee - 1), R);
        } else {
          call_args.clear();
          for (ir::Reg a : d.args) call_args.push_back(R[a]);
          r = exec<P>(t, d.callee, call_args.data(), call_args.size());
        }
        if (!r.ok()) return r.error();
        if (d.dst != ir::kNoReg) R[d.dst] = *r;
        break;
      }
      case ir::Opcode::kSafepoint: heap->safepoint(t.m); break;
      case ir::Opcode::kGoto: pc = d.t0; break;
      case ir::Opcode::kBranch: pc = R[d.a].v != 0 ? d.t0 : d.t1; break;
      case ir::Opcode::kSwitch: {
        const std::uint64_t k = R[d.a].v;
        pc = k < d.targets.size() ? d.targets[k] : d.targets.back();
        break;
      }
      case ir::Opcode::kReturn: return d.a == ir::kNoReg ? Value{} : R[d.a];
    }
  }
}

Error Interpreter::Impl::diagnose(const DecodedFunction& f, const Decoded& d, const Value* R) {
  // The interpreter's checks for `d`, in its order (exec above); the first that fails is the error.
  auto object = [&](ir::Reg r, const char* what) -> std::optional<Error> {
    if (!R[r].ref) return fail(f, d, fmt::format("{} of a scalar register v{}", what, r));
    if (R[r].v == 0) return fail(f, d, fmt::format("null reference in {} (v{})", what, r));
    return std::nullopt;
  };
  switch (d.op) {
    case ir::Opcode::kBinary: {
      if (R[d.a].ref || R[d.b].ref) return fail(f, d, "arithmetic on a reference");
      const auto op = static_cast<ir::BinaryOp>(d.sub);
      if ((op == ir::BinaryOp::kDiv || op == ir::BinaryOp::kRem) && R[d.b].v == 0) return fail(f, d, "division by zero");
      break;
    }
    case ir::Opcode::kGetField:
    case ir::Opcode::kPutField: {
      if (auto e = object(d.a, d.op == ir::Opcode::kGetField ? "getfield" : "putfield")) return *e;
      const Address o = R[d.a].v;
      if (Heap::header(o).type != d.type)
        return fail(f, d, fmt::format("object is a {}, not a {}", heap->type_of(o).name, heap->type(d.type).name));
      if (d.op == ir::Opcode::kPutField) {
        const Value& v = R[d.b];
        if (v.ref != d.field_ref && !(d.field_ref && v.v == 0))
          return fail(f, d, d.field_ref ? "storing a scalar in a reference field" : "storing a reference in a scalar field");
      }
      break;
    }
    case ir::Opcode::kArrayGet:
    case ir::Opcode::kArrayPut:
    case ir::Opcode::kArrayLength: {
      if (auto e = object(d.a, "array access")) return *e;
      const Address o = R[d.a].v;
      const SimType& ty = heap->type_of(o);
      if (!ty.is_array) return fail(f, d, fmt::format("object is a {}, not an array", ty.name));
      if (d.op == ir::Opcode::kArrayLength) break;
      const std::uint64_t n = Heap::header(o).word;
      const std::uint64_t i = R[d.b].v;
      if (R[d.b].ref || i >= n)
        return fail(f, d, fmt::format("index {} out of bounds for length {}", static_cast<std::int64_t>(i), n));
      if (d.op == ir::Opcode::kArrayPut) {
        const Value& v = R[d.c];
        if (v.ref != ty.elem_is_ref && !(ty.elem_is_ref && v.v == 0))
          return fail(f, d, ty.elem_is_ref ? "storing a scalar in a reference array" : "storing a reference in a scalar array");
      }
      break;
    }
    case ir::Opcode::kMonitorEnter:
    case ir::Opcode::kMonitorExit:
      if (auto e = object(d.a, "monitor")) return *e;
      break;
    case ir::Opcode::kInvoke:
      if (auto e = object(d.a, "invoke receiver")) return *e;
      break;
    default:
      break;
  }
  return fail(f, d, "compiled code failed a check the interpreter passes (a JIT bug)");
}

bool builtin_returns_tagged(std::int32_t callee) {
  if (callee >= 0) return false;
  const auto b = static_cast<Builtin>(-callee - 1);
  return b == Builtin::kStaticGet || b == Builtin::kStaticInit;
}

namespace rt {

std::uint32_t alloc(void* thread, std::uint32_t fn, std::uint32_t pc, Value* regs) noexcept {
  ThreadCtx& t = *static_cast<ThreadCtx*>(thread);
  Interpreter::Impl& im = *t.im;
  const DecodedFunction& f = im.fns[fn];
  const Decoded& d = f.code[pc];
  auto a = im.allocate(t, f, d, regs);
  if (!a.ok()) {
    t.error = a.error();
    return 1;
  }
  regs[d.dst] = *a;
  return 0;
}

std::uint32_t call(void* thread, std::uint32_t fn, std::uint32_t pc, Value* regs) noexcept {
  ThreadCtx& t = *static_cast<ThreadCtx*>(thread);
  Interpreter::Impl& im = *t.im;
  const DecodedFunction& f = im.fns[fn];
  const Decoded& d = f.code[pc];
  const std::uint64_t visits = t.gc_visits;
  Result<Value> r = Value{};
  if (d.callee < 0) {
    r = im.call_builtin(t, f, d, static_cast<Builtin>(-d.callee - 1), regs);
  } else {
    Value args[ir::kMaxInvokeArgs + 1];
    for (std::size_t i = 0; i < d.args.size(); ++i) args[i] = regs[d.args[i]];
    r = im.exec_any(im, t, d.callee, args, d.args.size());
  }
  if (r.ok() && !d.src->may_gc && t.gc_visits != visits)
    r = im.fail(f, d, "a collection ran inside this .nogc call (it allocates or reaches a GC point); "
                      "compiled code keeps references in registers across .nogc calls");
  if (!r.ok()) {
    t.error = r.error();
    return 1;
  }
  if (d.dst != ir::kNoReg) regs[d.dst] = *r;
  return 0;
}

std::uint32_t safepoint(void* thread) noexcept {
  ThreadCtx& t = *static_cast<ThreadCtx*>(thread);
  t.im->heap->safepoint(t.m);
  return 0;
}

std::uint32_t fail(void* thread, std::uint32_t fn, std::uint32_t pc, Value* regs) noexcept {
  ThreadCtx& t = *static_cast<ThreadCtx*>(thread);
  Interpreter::Impl& im = *t.im;
  const DecodedFunction& f = im.fns[fn];
  t.error = im.diagnose(f, f.code[pc], regs);
  return 1;
}

}  // namespace rt

Interpreter::Interpreter(std::unique_ptr<Impl> impl, InterpOptions options)
    : impl_(std::move(impl)), options_(std::move(options)) {}
Interpreter::~Interpreter() = default;

Result<std::unique_ptr<Interpreter>> Interpreter::create(const ir::Module& module, Heap& heap, Profiler* profiler,
                                                         InterpOptions options) {
  if (options.threads == 0 || options.threads > 256)
    return make_error(ErrorCode::kInvalidArgument, "threads must be between 1 and 256");
  auto impl = std::make_unique<Impl>();
  impl->module = &module;
  impl->heap = &heap;
  impl->profiler = profiler;
  impl->opt = options;
  if (profiler) {
    if (profiler->space_count() == 0) return make_error(ErrorCode::kInvalidArgument, "profiler has no heap space");
    impl->desc = &profiler->barrier_descriptor(0);
  }
  if (options.allocation_marks && profiler && !profiler->options().mark_on_alloc)
    return make_error(ErrorCode::kInvalidArgument,
                      "allocation_marks: the pass would assume that allocations mark their objects, but the profiler "
                      "was created without mark_on_alloc");
  if (options.roots_marked && profiler && !heap.options().mark_frame_roots)
    return make_error(ErrorCode::kInvalidArgument,
                      "roots_marked: the pass would assume that collections mark what the frames hold, but the heap "
                      "was created without mark_frame_roots");
  if (options.profile_cache && options.jit)
    return make_error(ErrorCode::kInvalidArgument,
                      "profile_cache needs interpreted code (compiled code keeps no per-site counts); drop the JIT");
  OBJPROF_RETURN_IF_ERROR(impl->decode());
  if (options.cache_plan) OBJPROF_RETURN_IF_ERROR(impl->apply_cache_plan(*options.cache_plan));
  with_barrier_policy(options.barrier, [&](auto policy) {
    using P = decltype(policy);
    impl->exec_any = [](Impl& im, ThreadCtx& t, std::int32_t fi, const Value* a, std::size_t n) {
      return im.exec<P>(t, fi, a, n);
    };
  });
  if (options.jit) {
    CompileRequest req;
    req.module = &module;
    req.heap = &heap;
    req.desc = impl->desc;
    req.barrier = options.barrier;
    for (const DecodedFunction& f : impl->fns) req.functions.push_back({f.ir, &f.code});
    std::vector<CompiledFunction> out = options.jit->compile(req);
    if (out.size() != impl->fns.size())
      return make_error(ErrorCode::kProtocol, "code generator returned a wrong number of functions");
    for (std::size_t i = 0; i < out.size(); ++i) impl->fns[i].compiled = std::move(out[i]);
  }
  heap.add_root_provider(&impl->statics);
  return std::unique_ptr<Interpreter>(new Interpreter(std::move(impl), std::move(options)));
}

Result<std::int64_t> Interpreter::run(const std::string& entry) {
  Impl& im = *impl_;
  auto it = im.fn_index.find(entry);
  if (it == im.fn_index.end()) return make_error(ErrorCode::kInvalidArgument, "no function '" + entry + "' in the workload");
  const std::int32_t fi = it->second;
  const std::uint32_t n = options_.threads;
  std::vector<std::unique_ptr<ThreadCtx>> ctx;
  for (std::uint32_t i = 0; i < n; ++i) {
    auto c = std::make_unique<ThreadCtx>();
    c->im = &im;
    c->tid = i;
    c->rng = options_.seed * 0x2545f4914f6cdd1dull + i;
    c->m.roots = c.get();
    if (options_.profile_cache) c->cache_sim.counts = CacheProfile::empty_for(im.cache_sites);
    if (im.profiler) {
      auto ts = im.profiler->attach_thread(i + 1, fmt::format("{}-{}", options_.module_name, i));
      if (!ts.ok()) {
        for (auto& done : ctx) im.profiler->detach_thread(*done->m.thread);
        return ts.error();
      }
      c->m.thread = *ts;
    }
    ctx.push_back(std::move(c));
  }
  // Every mutator is attached before any starts, so no GC can miss one.
  for (auto& c : ctx) im.heap->attach_mutator(&c->m);
  std::vector<std::optional<Result<Value>>> results(n);
  auto body = [&](std::uint32_t i) {
    ThreadCtx& t = *ctx[i];
    const Value args[3] = {{options_.size, false}, {i, false}, {n, false}};
    // A compiled entry must accept run()'s scalar arguments (see CompiledFunction::entry_safe).
    const bool may_compile = im.fns[static_cast<std::size_t>(fi)].compiled.entry_safe;
    results[i] = with_barrier_policy(options_.barrier, [&](auto policy) -> Result<Value> {
      return im.exec<decltype(policy)>(t, fi, args, 3, may_compile);
    });
    // Leave the profiler while still a running mutator, then the heap. No GC can start while
    // this thread runs, so no collector flushes its trace buffer while detach_thread does.
    // (The other order raced: a GC that began after detach_mutator flushed the same buffer.)
    if (im.profiler && t.m.thread) im.profiler->detach_thread(*t.m.thread);
    im.heap->detach_mutator(&t.m);
    std::lock_guard lk(im.stats_mu);
    im.totals.instructions += t.instructions;
    im.totals.accesses += t.accesses;
    im.totals.barriers_executed += t.barriers;
    im.totals.barriers_elided += t.elided;
    if (options_.profile_cache) (void)im.cache_profile.merge(t.cache_sim.counts);  // same sites by construction
  };
  std::vector<std::thread> threads;
  for (std::uint32_t i = 1; i < n; ++i) threads.emplace_back(body, i);
  body(0);
  for (auto& th : threads) th.join();
  for (std::uint32_t i = 0; i < n; ++i)
    if (!results[i]->ok())
      return make_error(results[i]->error().code,
                        n > 1 ? fmt::format("thread {}: {}", i, results[i]->error().message) : results[i]->error().message);
  const Value& v = results[0]->value();
  return v.ref ? std::int64_t{0} : static_cast<std::int64_t>(v.v);
}

std::vector<Interpreter::FunctionMode> Interpreter::function_modes() const {
  std::vector<FunctionMode> out;
  for (const DecodedFunction& f : impl_->fns)
    out.push_back({f.ir->name, f.compiled.entry != nullptr, f.compiled.entry ? std::string() : f.compiled.reason});
  return out;
}

Result<CacheProfile> Interpreter::cache_profile() const {
  if (!options_.profile_cache)
    return make_error(ErrorCode::kInvalidArgument, "no cache profile: the interpreter was created without profile_cache");
  std::lock_guard lk(impl_->stats_mu);
  if (impl_->cache_profile.sites.empty() && impl_->cache_profile.executed.empty())
    return CacheProfile::empty_for(impl_->cache_sites);  // no run yet
  return impl_->cache_profile;
}

Status Interpreter::Impl::apply_cache_plan(const CachePlan& plan) {
  if (plan.sites != cache_sites || plan.use.size() != cache_sites.size())
    return make_error(ErrorCode::kInvalidArgument,
                      fmt::format("the cache plan was made for other code: {} barrier sites in the plan, {} here "
                                  "(profile the same module with the same pass)",
                                  plan.sites.size(), cache_sites.size()));
  for (std::uint32_t id = 0; id < cache_sites.size(); ++id) {
    const CacheSiteKey& k = cache_sites[id];
    fns[k.fn].code[k.pc].cache_use[k.operand] = plan.use[id];
  }
  return Status::Ok();
}

InterpStats Interpreter::stats() const {
  std::lock_guard lk(impl_->stats_mu);
  return impl_->totals;
}

}  // namespace objprof::sim
