// SSA construction (Cytron et al.): phis at the iterated dominance frontier of each
// register's definition blocks, then renaming by an iterative dominator-tree walk with an undo
// log instead of per-register stacks. Afterwards, copy roots: a move's value is its source's,
// and a phi whose operands all share one root (ignoring itself) is that root (Braun et al.'s
// trivial phi), resolved with a union-find.
#include "objprof/ir/analysis.h"

#include "analysis_scratch.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <iterator>

namespace objprof::ir {
namespace {

Error invalid_ssa(const Function& f, std::string message) {
  return make_error(ErrorCode::kInvalidArgument, fmt::format("function '{}': ssa: {}", f.name, message));
}

// Most values are their own root (only copies and trivial phis are not): that case is one load.
inline ValueId find_root(ValueId* parent, ValueId v) {
  ValueId root = parent[v];
  if (root == v) return v;
  while (parent[root] != root) root = parent[root];
  while (parent[v] != root) {
    ValueId next = parent[v];
    parent[v] = root;
    v = next;
  }
  return root;
}

// Registers of at most this many 64-bit words are placed all at once with one bit set per
// block; wider register files (rare: up to 65536 registers) go one register at a time.
constexpr std::size_t kMaxSetWords = 4;

// All registers at once: phi(y) gets def(x) | phi(x) for every x with y in DF(x), until nothing
// changes. Each block is revisited only when its set grows, so the frontier lists are walked a
// few times in all instead of once per register.
// Leaves the sets in scratch.phi_set; returns the number of instructions in reachable blocks
// that define a register.
std::size_t place_phis_by_sets(const FunctionShape& shape, const Cfg& cfg, const DominanceFrontiers& df, SsaScratch& scratch) {
  const std::size_t n = shape.num_blocks();
  const std::uint32_t R = shape.num_regs;
  const std::size_t W = (R + 63) / 64;
  auto& def_set = scratch.def_set;
  auto& phi_set = scratch.phi_set;
  def_set.assign(n * W, 0);
  phi_set.assign(n * W, 0);
  auto& work = scratch.work;
  work.clear();
  auto& queued = scratch.queued;
  queued.assign(n, 0);
  std::size_t defined = 0;
  for (BlockId b : cfg.rpo) {
    std::uint64_t* d = def_set.data() + b * W;
    for (InstrId k = shape.block_begin[b]; k < shape.block_begin[b + 1]; ++k) {
      Reg r = shape.dst[k];
      if (r < R) {
        d[r / 64] |= 1ull << (r % 64);
        ++defined;
      }
    }
    if (!df.df[b].empty() && std::any_of(d, d + W, [](std::uint64_t w) { return w != 0; })) {
      work.push_back(b);
      queued[b] = 1;
    }
  }
  std::uint64_t src[kMaxSetWords];
  while (!work.empty()) {
    BlockId x = work.back();
    work.pop_back();
    queued[x] = 0;
    for (std::size_t w = 0; w < W; ++w) src[w] = def_set[x * W + w] | phi_set[x * W + w];
    for (BlockId y : df.df[x]) {
      std::uint64_t* py = phi_set.data() + y * W;
      bool grew = false;
      for (std::size_t w = 0; w < W; ++w) {
        std::uint64_t add = src[w] & ~py[w];
        py[w] |= add;
        grew |= add != 0;
      }
      if (grew && !queued[y] && !df.df[y].empty()) {
        queued[y] = 1;
        work.push_back(y);
      }
    }
  }
  return defined;
}

// One register at a time (Cytron et al.), with stamped work lists.
// Leaves the registers in scratch.phi_regs; returns what place_phis_by_sets returns.
std::size_t place_phis_by_register(const FunctionShape& shape, const Cfg& cfg, const DominanceFrontiers& df, SsaScratch& scratch) {
  const std::size_t n = shape.num_blocks();
  const std::uint32_t R = shape.num_regs;
  std::vector<std::pair<std::uint32_t, BlockId>> defs;  // (register, block), once per pair
  std::size_t defined = 0;
  {
    std::vector<BlockId> last_reg_block(R, kNoBlock);
    for (BlockId b : cfg.rpo) {
      for (InstrId k = shape.block_begin[b]; k < shape.block_begin[b + 1]; ++k) {
        Reg d = shape.dst[k];
        defined += d < R ? 1 : 0;
        if (d < R && last_reg_block[d] != b) {
          last_reg_block[d] = b;
          defs.emplace_back(d, b);
        }
      }
    }
  }
  const CsrLists<BlockId> def_blocks = CsrLists<BlockId>::from_pairs(R, defs);
  std::vector<std::pair<std::uint32_t, Reg>> placed;  // (block, register)
  std::vector<std::uint32_t> has_phi(n, kNoBlock), queued(n, kNoBlock);
  std::vector<BlockId> work;
  for (Reg r = 0; r < R; ++r) {
    work.clear();
    for (BlockId b : def_blocks[r]) {
      queued[b] = r;
      work.push_back(b);
    }
    while (!work.empty()) {
      BlockId x = work.back();
      work.pop_back();
      for (BlockId y : df.df[x]) {
        if (has_phi[y] == r) continue;
        has_phi[y] = r;
        placed.emplace_back(y, r);
        if (queued[y] != r) {
          queued[y] = r;
          work.push_back(y);
        }
      }
    }
  }
  scratch.phi_regs.assign_from_pairs(n, placed);
  return defined;
}

}  // namespace

std::size_t SsaForm::num_phis() const { return phis.total(); }

SsaForm SsaAnalysis::run(const FunctionShape& shape, const Cfg& cfg, const DomTree& dt, const DominanceFrontiers& df) {
  SsaForm ssa;
  SsaScratch scratch;
  run_ssa(shape, cfg, dt, df, ssa, scratch);
  return ssa;
}

void run_ssa(const FunctionShape& shape, const Cfg& cfg, const DomTree& dt, const DominanceFrontiers& df, SsaForm& ssa,
             SsaScratch& scratch) {
  const std::size_t n = shape.num_blocks();
  const std::uint32_t R = shape.num_regs;
  const auto total_instrs = static_cast<std::uint32_t>(shape.num_instrs());
  ssa.num_regs = R;
  ssa.instr_base.assign(shape.block_begin.begin(), shape.block_begin.end());
  ssa.use_base.assign(shape.use_begin.begin(), shape.use_begin.end() - 1);
  // Renaming writes every entry of reachable blocks; unreachable ones are filled below, so
  // the arrays are not cleared first (at 100k blocks, entry_values alone is 6 MB). The same
  // holds for the values, phis, phi operands and copy roots below: every element is written,
  // so none is cleared and a resize zero-fills only what an earlier function did not reach.
  ssa.uses.resize(shape.uses.size());
  ssa.defs.resize(total_instrs);
  ssa.entry_values.resize(static_cast<std::size_t>(n) * R);
  auto clear_block = [&](BlockId b) {
    std::fill_n(ssa.entry_values.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(b) * R), R, kNoValue);
    std::fill(ssa.defs.begin() + shape.block_begin[b], ssa.defs.begin() + shape.block_begin[b + 1], kNoValue);
    std::fill(ssa.uses.begin() + shape.use_begin[shape.block_begin[b]], ssa.uses.begin() + shape.use_begin[shape.block_begin[b + 1]],
              kNoValue);
  };
  for (BlockId b : cfg.unreachable) clear_block(b);
  if (cfg.rpo.empty()) {
    for (BlockId b = 0; b < n; ++b) clear_block(b);
    ssa.phis.offsets_.assign(n + 1, 0);
    ssa.values.clear();
    ssa.phis.items_.clear();
    ssa.phi_args.clear();
    ssa.copy_root.clear();
    return;
  }
  const BlockId entry = cfg.rpo[0];
  const Reg* dst = shape.dst.data();

  // 1-2. Phi placement at the iterated dominance frontier of each register's definition blocks
  // (reachable blocks only), per block in register order.
  const std::size_t W = (R + 63) / 64;
  const bool by_sets = W <= kMaxSetWords;
  const std::size_t defined = by_sets ? place_phis_by_sets(shape, cfg, df, scratch) : place_phis_by_register(shape, cfg, df, scratch);
  {
    // Exact sizes up front: the unstructured 100k-block corpus has ~1.5 phis per instruction,
    // and regrowing these arrays costs more page faults than filling them.
    std::size_t num_phis = 0;
    if (by_sets) {
      for (std::uint64_t w : scratch.phi_set) num_phis += static_cast<std::size_t>(std::popcount(w));
    } else {
      num_phis = scratch.phi_regs.items_.size();
    }
    ssa.values.reserve(R + num_phis + defined);
    ssa.values.resize(R + num_phis);
    for (Reg r = 0; r < R; ++r) ssa.values[r] = {SsaForm::Kind::kEntry, r, entry, r};
    ssa.phis.offsets_.resize(n + 1);
    ssa.phis.items_.resize(num_phis);
    SsaForm::Value* values = ssa.values.data();
    SsaForm::Phi* phis = ssa.phis.items_.data();
    std::uint32_t p = 0, arg = 0;
    for (BlockId y = 0; y < n; ++y) {
      ssa.phis.offsets_[y] = p;
      const auto nargs = static_cast<std::uint32_t>(cfg.preds[y].size());
      const std::uint32_t first = p;
      auto add = [&](Reg r) {
        const ValueId v = R + p;
        values[v] = {SsaForm::Kind::kPhi, r, y, p - first};
        phis[p++] = {r, v, arg, nargs};
        arg += nargs;
      };
      if (by_sets) {
        for (std::size_t w = 0; w < W; ++w) {
          for (std::uint64_t bits = scratch.phi_set[y * W + w]; bits != 0; bits &= bits - 1) {
            add(static_cast<Reg>(w * 64 + static_cast<unsigned>(std::countr_zero(bits))));
          }
        }
      } else {
        for (Reg r : scratch.phi_regs[y]) add(r);
      }
    }
    ssa.phis.offsets_[n] = p;
    // Renaming writes the operands from reachable predecessors; only those from unreachable
    // ones are set here (at 100k unstructured blocks the array is 6 MB, so not filled twice).
    ssa.phi_args.resize(arg);
    for (BlockId u : cfg.unreachable) {
      for (std::uint32_t e = cfg.succs.offsets_[u]; e < cfg.succs.offsets_[u + 1]; ++e) {
        const std::uint32_t j = cfg.pred_position[e];
        for (const auto& phi : ssa.phis[cfg.succs.items_[e]]) ssa.phi_args[phi.first_arg + j] = kNoValue;
      }
    }
  }

  // 3. Renaming: preorder walk of the dominator tree; `live` (scratch.cur) holds the live value
  // per register and `undo` restores it when a subtree is left.
  auto& cur = scratch.cur;
  cur.resize(R);
  for (Reg r = 0; r < R; ++r) cur[r] = r;
  auto& parent = scratch.parent;  // union-find for copy roots, filled as values are created
  parent.reserve(ssa.values.capacity());
  parent.resize(ssa.values.size());
  for (ValueId v = 0; v < ssa.values.size(); ++v) parent[v] = v;
  auto& undo = scratch.undo;
  undo.clear();
  auto& stack = scratch.stack;
  stack.clear();
  // Local pointers to the arrays renaming reads and writes in place: the push_backs below may
  // allocate, after which the compiler would otherwise reload every vector's data pointer.
  const InstrId* block_begin = shape.block_begin.data();
  const std::uint32_t* use_begin = shape.use_begin.data();
  const Reg* reg_uses = shape.uses.data();
  const std::uint8_t* flags = shape.flags.data();
  const std::uint32_t* phi_begin = ssa.phis.offsets_.data();
  const SsaForm::Phi* phis = ssa.phis.items_.data();
  const std::uint32_t* succ_begin = cfg.succs.offsets_.data();
  const BlockId* succs = cfg.succs.items_.data();
  const std::uint32_t* pred_position = cfg.pred_position.data();
  ValueId* uses = ssa.uses.data();
  ValueId* defs = ssa.defs.data();
  ValueId* entry_values = ssa.entry_values.data();
  ValueId* phi_args = ssa.phi_args.data();
  ValueId* live = cur.data();
  // The walk enters one block per turn (`b`), in one place, so that the body is inlined with
  // the pointers above in registers.
  BlockId b = entry;
  while (true) {
    if (b != kNoBlock) {
      stack.push_back({b, 0, undo.size()});
      // Loop ends are hoisted: the stores below are 32-bit, like the offsets they end at.
      for (const SsaForm::Phi *phi = phis + phi_begin[b], *end = phis + phi_begin[b + 1]; phi != end; ++phi) {
        undo.emplace_back(phi->reg, live[phi->reg]);
        live[phi->reg] = phi->value;
      }
      std::copy(live, live + R, entry_values + static_cast<std::size_t>(b) * R);
      const InstrId first = block_begin[b];
      for (InstrId k = first, last = block_begin[b + 1]; k < last; ++k) {
        const std::uint32_t u0 = use_begin[k], u1 = use_begin[k + 1];
        for (std::uint32_t u = u0; u < u1; ++u) uses[u] = reg_uses[u] < R ? live[reg_uses[u]] : kNoValue;
        Reg d = dst[k];
        if (d < R) {
          auto v = static_cast<ValueId>(ssa.values.size());
          ssa.values.push_back({SsaForm::Kind::kInstr, d, b, k - first});
          bool copy = (flags[k] & FunctionShape::kCopy) != 0 && u1 > u0 && uses[u0] != kNoValue;
          parent.push_back(copy ? uses[u0] : v);
          defs[k] = v;
          undo.emplace_back(d, live[d]);
          live[d] = v;
        } else {
          defs[k] = kNoValue;
        }
      }
      for (std::uint32_t e = succ_begin[b], e_end = succ_begin[b + 1]; e < e_end; ++e) {
        const std::uint32_t j = pred_position[e];
        const BlockId t = succs[e];
        for (const SsaForm::Phi *phi = phis + phi_begin[t], *end = phis + phi_begin[t + 1]; phi != end; ++phi) {
          phi_args[phi->first_arg + j] = live[phi->reg];
        }
      }
    }
    if (stack.empty()) break;
    SsaScratch::Frame& fr = stack.back();
    const auto kids = dt.children[fr.block];
    if (fr.next_child < kids.size()) {
      b = kids[fr.next_child++];
      continue;
    }
    b = kNoBlock;
    std::size_t mark = fr.undo_mark;
    while (undo.size() > mark) {
      live[undo.back().first] = undo.back().second;
      undo.pop_back();
    }
    stack.pop_back();
  }

  // 4. Copy roots. Trivial phis, in RPO so that most chains resolve in one sweep.
  ValueId* root_of = parent.data();
  for (BlockId y : cfg.rpo) {
    for (const SsaForm::Phi *phi = phis + phi_begin[y], *end = phis + phi_begin[y + 1]; phi != end; ++phi) {
      // A phi is its own root until this visit: only a phi's own visit re-roots it.
      const ValueId self = phi->value;
      const ValueId* in = phi_args + phi->first_arg;
      const ValueId* in_end = in + phi->num_args;
      ValueId only = kNoValue;
      bool trivial = true;
      for (; in != in_end; ++in) {
        if (*in == kNoValue) continue;  // from an unreachable predecessor
        const ValueId root = find_root(root_of, *in);
        if (root == self) continue;
        if (only == kNoValue) {
          only = root;
        } else if (only != root) {
          trivial = false;
          break;
        }
      }
      if (trivial && only != kNoValue) root_of[self] = only;
    }
  }
  ssa.copy_root.resize(ssa.values.size());
  ValueId* copy_root = ssa.copy_root.data();
  for (ValueId v = 0; v < ssa.values.size(); ++v) copy_root[v] = find_root(root_of, v);
}

std::string print_ssa(const Function& f, const Cfg& cfg, const SsaForm& ssa) {
  std::string s = fmt::format("ssa of {}: {} values, {} phis\n", f.name, ssa.values.size(), ssa.num_phis());
  auto out = std::back_inserter(s);
  auto val = [&](ValueId v) { return v == kNoValue ? std::string("undef") : fmt::format("%{}", v); };
  for (BlockId b = 0; b < f.blocks.size(); ++b) {
    fmt::format_to(out, "{}:{}\n", f.blocks[b].name, cfg.reachable(b) ? "" : "  ; unreachable");
    if (!cfg.reachable(b)) continue;
    for (const auto& phi : ssa.phis[b]) {
      fmt::format_to(out, "  {} = phi v{}", val(phi.value), phi.reg);
      for (std::size_t j = 0; j < phi.num_args; ++j) {
        fmt::format_to(out, "{} [{}, {}]", j ? "," : "", val(ssa.incoming(phi)[j]), f.blocks[cfg.preds[b][j]].name);
      }
      if (ssa.copy_root[phi.value] != phi.value) fmt::format_to(out, "  ; = {}", val(ssa.copy_root[phi.value]));
      s += "\n";
    }
    const Block& block = f.blocks[b];
    for (std::size_t i = 0; i < block.instrs.size(); ++i) {
      const Instr& in = block.instrs[i];
      s += "  ";
      ValueId d = ssa.def(b, i);
      if (d != kNoValue) fmt::format_to(out, "{} = ", val(d));
      s += opcode_name(in.op);
      for (std::size_t a = 0; a < in.args.size(); ++a) fmt::format_to(out, "{} {}", a ? "," : "", val(ssa.use(b, i, a)));
      for (std::size_t t = 0; t < in.targets.size(); ++t) fmt::format_to(out, ", {}", f.blocks[in.targets[t]].name);
      if (is_access(in.op)) fmt::format_to(out, " #{}", in.site);
      s += "\n";
    }
  }
  return s;
}

Status verify_ssa(const Function& f, const Cfg& cfg, const DomTree& dt, const SsaForm& ssa) {
  const std::uint32_t R = f.num_regs;
  // Definition point of a value as (block, position) where phis and entry values are at -1.
  auto dominates_use = [&](ValueId v, BlockId ub, std::int64_t upos) {
    if (v >= ssa.values.size()) return false;
    const auto& info = ssa.values[v];
    std::int64_t dpos = info.kind == SsaForm::Kind::kInstr ? static_cast<std::int64_t>(info.index) : -1;
    if (info.block == ub) return dpos < upos;
    return dt.dominates(info.block, ub);
  };
  for (BlockId b : cfg.rpo) {
    for (const auto& phi : ssa.phis[b]) {
      if (phi.num_args != cfg.preds[b].size() || phi.first_arg + phi.num_args > ssa.phi_args.size()) return invalid_ssa(f, fmt::format("phi in '{}' has wrong arity", f.blocks[b].name));
      if (ssa.values[phi.value].block != b) return invalid_ssa(f, "phi value defined elsewhere");
      for (std::size_t j = 0; j < phi.num_args; ++j) {
        BlockId p = cfg.preds[b][j];
        if (!cfg.reachable(p)) continue;
        ValueId v = ssa.incoming(phi)[j];
        if (v == kNoValue || ssa.values[v].reg != phi.reg) return invalid_ssa(f, fmt::format("phi in '{}' has a bad operand", f.blocks[b].name));
        if (!dominates_use(v, p, static_cast<std::int64_t>(f.blocks[p].instrs.size()))) {
          return invalid_ssa(f, fmt::format("phi operand %{} in '{}' not dominated by its definition", v, f.blocks[b].name));
        }
      }
    }
    const Block& block = f.blocks[b];
    for (std::size_t i = 0; i < block.instrs.size(); ++i) {
      const Instr& in = block.instrs[i];
      for (std::size_t a = 0; a < in.args.size(); ++a) {
        ValueId v = ssa.use(b, i, a);
        if (v == kNoValue || ssa.values[v].reg != in.args[a]) {
          return invalid_ssa(f, fmt::format("'{}' instruction {} uses a value of the wrong register", block.name, i));
        }
        if (!dominates_use(v, b, static_cast<std::int64_t>(i))) {
          return invalid_ssa(f, fmt::format("'{}' instruction {} uses %{} before its definition", block.name, i, v));
        }
      }
    }
    for (Reg r = 0; r < R; ++r) {
      ValueId v = ssa.entry_value(b, r);
      if (v == kNoValue || ssa.values[v].reg != r || !dominates_use(v, b, 0)) {
        return invalid_ssa(f, fmt::format("entry value of v{} in '{}' is wrong", r, block.name));
      }
    }
  }
  // Reaching definitions: on every edge p->b, the value of r leaving p must equal the value
  // entering b (directly, or as the phi's operand for that edge). Together with the dominance
  // checks this pins renaming down exactly.
  std::vector<ValueId> cur(R);
  for (BlockId p : cfg.rpo) {
    for (Reg r = 0; r < R; ++r) cur[r] = ssa.entry_value(p, r);
    for (std::size_t i = 0; i < f.blocks[p].instrs.size(); ++i) {
      const Instr& in = f.blocks[p].instrs[i];
      for (std::size_t a = 0; a < in.args.size(); ++a) {
        if (ssa.use(p, i, a) != cur[in.args[a]]) return invalid_ssa(f, fmt::format("use in '{}' is not the reaching definition", f.blocks[p].name));
      }
      if (in.dst != kNoReg) cur[in.dst] = ssa.def(p, i);
    }
    for (BlockId s : cfg.succs[p]) {
      std::size_t j = static_cast<std::size_t>(std::find(cfg.preds[s].begin(), cfg.preds[s].end(), p) - cfg.preds[s].begin());
      for (Reg r = 0; r < R; ++r) {
        ValueId in_s = ssa.entry_value(s, r);
        const auto& info = ssa.values[in_s];
        ValueId want = in_s;
        if (info.kind == SsaForm::Kind::kPhi && info.block == s) want = ssa.incoming(ssa.phis[s][info.index])[j];
        if (want != cur[r]) {
          return invalid_ssa(f, fmt::format("v{} leaving '{}' is %{} but '{}' expects %{}", r, f.blocks[p].name, cur[r],
                                            f.blocks[s].name, want));
        }
      }
    }
  }
  return Status::Ok();
}

}  // namespace objprof::ir
