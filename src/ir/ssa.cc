// SSA construction (Cytron et al.): phis at the iterated dominance frontier of each
// register's definition blocks, then renaming by an iterative dominator-tree walk with an undo
// log instead of per-register stacks. Afterwards, copy roots: a move's value is its source's,
// and a phi whose operands all share one root (ignoring itself) is that root (Braun et al.'s
// trivial phi), resolved with a union-find.
#include "objprof/ir/analysis.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

namespace objprof::ir {
namespace {

Error invalid_ssa(const Function& f, std::string message) {
  return make_error(ErrorCode::kInvalidArgument, fmt::format("function '{}': ssa: {}", f.name, message));
}

ValueId find_root(std::vector<ValueId>& parent, ValueId v) {
  ValueId root = v;
  while (parent[root] != root) root = parent[root];
  while (parent[v] != root) {
    ValueId next = parent[v];
    parent[v] = root;
    v = next;
  }
  return root;
}

}  // namespace

std::size_t SsaForm::num_phis() const {
  std::size_t n = 0;
  for (const auto& p : phis) n += p.size();
  return n;
}

SsaForm SsaAnalysis::run(const Function& f, const Cfg& cfg, const DomTree& dt, const DominanceFrontiers& df) {
  const std::size_t n = f.blocks.size();
  const std::uint32_t R = f.num_regs;
  SsaForm ssa;
  ssa.num_regs = R;
  ssa.phis.resize(n);
  ssa.instr_base.resize(n + 1);
  std::uint32_t total_instrs = 0, total_uses = 0;
  for (BlockId b = 0; b < n; ++b) {
    ssa.instr_base[b] = total_instrs;
    total_instrs += static_cast<std::uint32_t>(f.blocks[b].instrs.size());
    for (const Instr& in : f.blocks[b].instrs) total_uses += static_cast<std::uint32_t>(in.args.size());
  }
  ssa.instr_base[n] = total_instrs;
  ssa.use_base.resize(total_instrs);
  ssa.uses.assign(total_uses, kNoValue);
  ssa.defs.assign(total_instrs, kNoValue);
  {
    std::uint32_t u = 0, k = 0;
    for (BlockId b = 0; b < n; ++b) {
      for (const Instr& in : f.blocks[b].instrs) {
        ssa.use_base[k++] = u;
        u += static_cast<std::uint32_t>(in.args.size());
      }
    }
  }
  ssa.entry_values.assign(static_cast<std::size_t>(n) * R, kNoValue);
  if (cfg.rpo.empty()) return ssa;
  const BlockId entry = cfg.rpo[0];
  for (Reg r = 0; r < R; ++r) ssa.values.push_back({SsaForm::Kind::kEntry, r, entry, r});

  // 1. Definition blocks per register (reachable blocks only), as a CSR list.
  std::vector<std::uint32_t> def_count(R + 1, 0);
  std::vector<Reg> last_reg_block(R, kNoBlock);
  for (BlockId b : cfg.rpo) {
    for (const Instr& in : f.blocks[b].instrs) {
      if (in.dst != kNoReg && in.dst < R && last_reg_block[in.dst] != b) {
        last_reg_block[in.dst] = b;
        ++def_count[in.dst + 1];
      }
    }
  }
  for (Reg r = 0; r < R; ++r) def_count[r + 1] += def_count[r];
  std::vector<BlockId> def_blocks(def_count[R]);
  {
    std::vector<std::uint32_t> fill(def_count.begin(), def_count.end() - 1);
    std::fill(last_reg_block.begin(), last_reg_block.end(), kNoBlock);
    for (BlockId b : cfg.rpo) {
      for (const Instr& in : f.blocks[b].instrs) {
        if (in.dst != kNoReg && in.dst < R && last_reg_block[in.dst] != b) {
          last_reg_block[in.dst] = b;
          def_blocks[fill[in.dst]++] = b;
        }
      }
    }
  }

  // 2. Phi placement: iterated dominance frontier per register (stamped work lists).
  std::vector<std::uint32_t> has_phi(n, kNoBlock), queued(n, kNoBlock);
  std::vector<BlockId> work;
  for (Reg r = 0; r < R; ++r) {
    work.clear();
    for (std::uint32_t i = def_count[r]; i < def_count[r + 1]; ++i) {
      queued[def_blocks[i]] = r;
      work.push_back(def_blocks[i]);
    }
    while (!work.empty()) {
      BlockId x = work.back();
      work.pop_back();
      for (BlockId y : df.df[x]) {
        if (has_phi[y] == r) continue;
        has_phi[y] = r;
        ValueId v = static_cast<ValueId>(ssa.values.size());
        ssa.values.push_back({SsaForm::Kind::kPhi, r, y, static_cast<std::uint32_t>(ssa.phis[y].size())});
        auto nargs = static_cast<std::uint32_t>(cfg.preds[y].size());
        ssa.phis[y].push_back({r, v, static_cast<std::uint32_t>(ssa.phi_args.size()), nargs});
        ssa.phi_args.resize(ssa.phi_args.size() + nargs, kNoValue);
        if (queued[y] != r) {
          queued[y] = r;
          work.push_back(y);
        }
      }
    }
  }

  // 3. Renaming: preorder walk of the dominator tree; `cur` holds the live value per register
  // and `undo` restores it when a subtree is left.
  std::vector<ValueId> cur(R);
  for (Reg r = 0; r < R; ++r) cur[r] = r;
  std::vector<ValueId> parent;  // union-find for copy roots, filled as values are created
  parent.reserve(ssa.values.size() + total_instrs);
  for (ValueId v = 0; v < ssa.values.size(); ++v) parent.push_back(v);
  std::vector<std::pair<Reg, ValueId>> undo;
  struct Frame {
    BlockId block;
    std::uint32_t next_child;
    std::size_t undo_mark;
  };
  std::vector<Frame> stack;
  auto enter = [&](BlockId b) {
    stack.push_back({b, 0, undo.size()});
    for (const auto& phi : ssa.phis[b]) {
      undo.emplace_back(phi.reg, cur[phi.reg]);
      cur[phi.reg] = phi.value;
    }
    std::copy(cur.begin(), cur.end(), ssa.entry_values.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(b) * R));
    const Block& block = f.blocks[b];
    std::uint32_t k = ssa.instr_base[b];
    for (std::uint32_t i = 0; i < block.instrs.size(); ++i, ++k) {
      const Instr& in = block.instrs[i];
      std::uint32_t u = ssa.use_base[k];
      for (std::size_t a = 0; a < in.args.size(); ++a) ssa.uses[u + a] = in.args[a] < R ? cur[in.args[a]] : kNoValue;
      if (in.dst != kNoReg && in.dst < R) {
        ValueId v = static_cast<ValueId>(ssa.values.size());
        ssa.values.push_back({SsaForm::Kind::kInstr, in.dst, b, i});
        bool copy = in.op == Opcode::kMove && !in.args.empty() && ssa.uses[u] != kNoValue;
        parent.push_back(copy ? ssa.uses[u] : v);
        ssa.defs[k] = v;
        undo.emplace_back(in.dst, cur[in.dst]);
        cur[in.dst] = v;
      }
    }
    for (BlockId s : cfg.succs[b]) {
      auto preds = cfg.preds[s];
      std::size_t j = static_cast<std::size_t>(std::find(preds.begin(), preds.end(), b) - preds.begin());
      for (auto& phi : ssa.phis[s]) ssa.phi_args[phi.first_arg + j] = cur[phi.reg];
    }
  };
  enter(entry);
  while (!stack.empty()) {
    Frame& fr = stack.back();
    const auto& kids = dt.children[fr.block];
    if (fr.next_child < kids.size()) {
      enter(kids[fr.next_child++]);
      continue;
    }
    std::size_t mark = fr.undo_mark;
    while (undo.size() > mark) {
      cur[undo.back().first] = undo.back().second;
      undo.pop_back();
    }
    stack.pop_back();
  }

  // 4. Copy roots. Trivial phis, in RPO so that most chains resolve in one sweep.
  parent.resize(ssa.values.size());
  for (BlockId b : cfg.rpo) {
    for (const auto& phi : ssa.phis[b]) {
      ValueId only = kNoValue;
      bool trivial = true;
      for (ValueId in : ssa.incoming(phi)) {
        if (in == kNoValue) continue;  // from an unreachable predecessor
        ValueId root = find_root(parent, in);
        if (root == find_root(parent, phi.value)) continue;
        if (only == kNoValue) {
          only = root;
        } else if (only != root) {
          trivial = false;
          break;
        }
      }
      if (trivial && only != kNoValue) parent[find_root(parent, phi.value)] = only;
    }
  }
  ssa.copy_root.resize(ssa.values.size());
  for (ValueId v = 0; v < ssa.values.size(); ++v) ssa.copy_root[v] = find_root(parent, v);
  return ssa;
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
