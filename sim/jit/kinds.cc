#include "kinds.h"

#include <cstddef>

namespace objprof::sim::jit {
namespace {

using sim::DecodedInstr;

// Registers some use may read before any definition: a forward "maybe undefined" dataflow over
// the blocks (parameters are defined on entry).
std::vector<std::uint8_t> maybe_uninit(const ir::Function& f) {
  const std::size_t words = (f.num_regs + 63) / 64, nb = f.blocks.size();
  std::vector<std::vector<std::uint64_t>> in(nb, std::vector<std::uint64_t>(words, 0));
  std::vector<std::uint8_t> reached(nb, 0), out(f.num_regs, 0);
  auto set = [](std::vector<std::uint64_t>& s, ir::Reg r) { s[r / 64] |= std::uint64_t{1} << (r % 64); };
  auto clear = [](std::vector<std::uint64_t>& s, ir::Reg r) { s[r / 64] &= ~(std::uint64_t{1} << (r % 64)); };
  auto test = [](const std::vector<std::uint64_t>& s, ir::Reg r) { return (s[r / 64] >> (r % 64)) & 1; };
  if (nb == 0) return out;
  for (ir::Reg r = 0; r < f.num_regs; ++r) set(in[0], r);
  for (ir::Reg p : f.params) clear(in[0], p);
  reached[0] = 1;
  bool changed = true;
  while (changed) {
    changed = false;
    for (std::size_t b = 0; b < nb; ++b) {
      if (!reached[b]) continue;
      std::vector<std::uint64_t> cur = in[b];
      for (const ir::Instr& in_ : f.blocks[b].instrs) {
        for (ir::Reg r : in_.args)
          if (r < f.num_regs && test(cur, r)) out[r] = 1;
        if (in_.dst != ir::kNoReg && in_.dst < f.num_regs) clear(cur, in_.dst);
      }
      for (ir::BlockId s : f.blocks[b].instrs.back().targets) {
        bool grew = !reached[s];
        reached[s] = 1;
        for (std::size_t w = 0; w < words; ++w) {
          const std::uint64_t merged = in[s][w] | cur[w];
          if (merged != in[s][w]) grew = true;
          in[s][w] = merged;
        }
        changed |= grew;
      }
    }
  }
  return out;
}

std::uint8_t array_elem_kind(const ir::Module& m, const std::string& elem) {
  return (elem == "ref" || m.find_type(elem) != nullptr) ? kRef : kScalar;
}

}  // namespace

std::vector<FunctionKinds> infer_kinds(const sim::CompileRequest& req) {
  std::vector<FunctionKinds> ks(req.functions.size());
  for (std::size_t fi = 0; fi < req.functions.size(); ++fi) {
    const ir::Function& f = *req.functions[fi].ir;
    FunctionKinds& k = ks[fi];
    k.reg.assign(f.num_regs, kNoKind);
    k.elem.assign(f.num_regs, kNoKind);
    k.maybe_uninit = maybe_uninit(f);
    for (ir::Reg r = 0; r < f.num_regs; ++r)
      if (k.maybe_uninit[r]) k.reg[r] |= kScalar;  // the register file starts as {0, scalar}
  }
  // Monotone joins over a 2-bit lattice: a few rounds reach the fixed point.
  bool changed = true;
  auto join = [&changed](std::uint8_t& into, std::uint8_t v) {
    if ((into | v) != into) {
      into |= v;
      changed = true;
    }
  };
  while (changed) {
    changed = false;
    for (std::size_t fi = 0; fi < req.functions.size(); ++fi) {
      FunctionKinds& k = ks[fi];
      for (const DecodedInstr& d : *req.functions[fi].code) {
        std::uint8_t kind = kScalar, elem = kNoKind;
        switch (d.op) {
          case ir::Opcode::kNull: kind = kRef; break;
          case ir::Opcode::kMove: kind = k.reg[d.a]; elem = k.elem[d.a]; break;
          case ir::Opcode::kNew: kind = kRef; break;
          case ir::Opcode::kNewArray:
            kind = kRef;
            elem = array_elem_kind(*req.module, d.src->type);
            break;
          case ir::Opcode::kGetField:
            kind = d.field_ref ? kRef : kScalar;
            elem = d.field_ref ? kDynamic : kNoKind;
            break;
          case ir::Opcode::kArrayGet:
            // Elements of a scalar array are scalars; of a reference array references; unknown: both.
            kind = k.elem[d.a] == kNoKind ? std::uint8_t{kScalar} : k.elem[d.a];
            elem = (kind & kRef) ? kDynamic : kNoKind;
            break;
          case ir::Opcode::kInvoke:
          case ir::Opcode::kCallStatic:
            if (d.callee >= 0) {
              FunctionKinds& callee = ks[static_cast<std::size_t>(d.callee)];
              const auto& params = req.functions[static_cast<std::size_t>(d.callee)].ir->params;
              for (std::size_t i = 0; i < d.args.size() && i < params.size(); ++i) {
                join(callee.reg[params[i]], k.reg[d.args[i]]);
                join(callee.elem[params[i]], k.elem[d.args[i]]);
              }
              kind = callee.ret == kNoKind ? std::uint8_t{kScalar} : callee.ret;
              elem = callee.ret_elem;
            } else if (sim::builtin_returns_tagged(d.callee)) {
              kind = kDynamic;
              elem = kDynamic;
            }
            break;
          case ir::Opcode::kReturn:
            if (d.a == ir::kNoReg) {
              join(k.ret, kScalar);
            } else {
              join(k.ret, k.reg[d.a]);
              join(k.ret_elem, k.elem[d.a]);
            }
            continue;
          default: break;
        }
        if (d.dst == ir::kNoReg) continue;
        join(k.reg[d.dst], kind);
        join(k.elem[d.dst], elem);
      }
    }
  }
  return ks;
}

}  // namespace objprof::sim::jit
