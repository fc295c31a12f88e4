// Path lengths by walking the emitted node list. Conditional branches are classified by what
// the emitters use them for (x86_barrier.h, a64_barrier.h): the cache compare branches on
// equal, the range check on unsigned >=, test-first on bit set; the exclusive loop's retry
// (cbnz) is taken only under contention, so never here.
#include "backends/barrier_paths.h"

#include "backends/barrier_emitter.h"
#include "backends/emit_util.h"

#include <asmjit/arm/a64builder.h>
#include <asmjit/x86.h>

#include <unordered_map>
#include <vector>

namespace objprof::backends {

namespace {

enum class Branch : std::uint8_t { kNone, kAlways, kOnHit, kOnOutOfRange, kOnBitSet, kNever };

struct Step {
  bool label = false;
  std::uint32_t label_id = 0;  // label: its id; branch: its target
  Branch branch = Branch::kNone;
};

Branch classify_x86(asmjit::InstId id) {
  namespace x86 = asmjit::x86;
  switch (id) {
    case x86::Inst::kIdJmp: return Branch::kAlways;
    case x86::Inst::kIdJe: return Branch::kOnHit;
    case x86::Inst::kIdJae: return Branch::kOnOutOfRange;
    case x86::Inst::kIdJnz: return Branch::kOnBitSet;
    default: return Branch::kNone;
  }
}

Branch classify_a64(asmjit::InstId id) {
  namespace a64 = asmjit::a64;
  const asmjit::InstId real = asmjit::BaseInst::extractRealId(id);
  if (real == a64::Inst::kIdCbnz || real == a64::Inst::kIdCbz) return Branch::kNever;
  if (real != a64::Inst::kIdB) return Branch::kNone;
  switch (asmjit::BaseInst::extractARMCondCode(id)) {
    case asmjit::arm::CondCode::kEQ: return Branch::kOnHit;
    case asmjit::arm::CondCode::kHS: return Branch::kOnOutOfRange;
    case asmjit::arm::CondCode::kNE: return Branch::kOnBitSet;
    default: return Branch::kAlways;
  }
}

struct Outcome {
  bool hit, out_of_range, bit_set;
};

int walk(const std::vector<Step>& steps, Outcome o) {
  std::unordered_map<std::uint32_t, std::size_t> at;
  for (std::size_t i = 0; i < steps.size(); ++i)
    if (steps[i].label) at[steps[i].label_id] = i;
  int count = 0;
  for (std::size_t i = 0; i < steps.size() && count < 1000;) {
    const Step& s = steps[i];
    if (s.label) {
      ++i;
      continue;
    }
    ++count;
    bool taken = false;
    switch (s.branch) {
      case Branch::kNone:
      case Branch::kNever: break;
      case Branch::kAlways: taken = true; break;
      case Branch::kOnHit: taken = o.hit; break;
      case Branch::kOnOutOfRange: taken = o.out_of_range; break;
      case Branch::kOnBitSet: taken = o.bit_set; break;
    }
    i = taken ? at.at(s.label_id) : i + 1;
  }
  return count;
}

template <class Builder, class Regs>
Result<std::vector<Step>> emit_steps(asmjit::Arch arch, const EmitterConfig& cfg, const BarrierDescriptor& desc,
                                     const Regs& regs, Branch (*classify)(asmjit::InstId)) {
  asmjit::CodeHolder code;
  if (Status s = detail::asmjit_status(code.init(asmjit::Environment(arch)), "CodeHolder::init"); !s) return s.error();
  Builder b(&code);
  if (Status s = emit_access_barrier(b, cfg, desc, regs); !s) return s.error();
  std::vector<Step> steps;
  for (asmjit::BaseNode* n = b.firstNode(); n != nullptr; n = n->next()) {
    Step step;
    if (n->isLabel()) {
      step.label = true;
      step.label_id = n->as<asmjit::LabelNode>()->labelId();
    } else if (n->isInst()) {
      const auto* inst = n->as<asmjit::InstNode>();
      step.branch = classify(inst->id());
      if (step.branch != Branch::kNone && inst->opCount() > 0 && inst->op(inst->opCount() - 1).isLabel())
        step.label_id = inst->op(inst->opCount() - 1).id();
      else
        step.branch = step.branch == Branch::kNever ? Branch::kNever : Branch::kNone;
    } else {
      continue;
    }
    steps.push_back(step);
  }
  return steps;
}

}  // namespace

Result<BarrierPaths> barrier_paths(asmjit::Arch arch, const EmitterConfig& cfg, const BarrierDescriptor& desc,
                                   bool desc_register) {
  Result<std::vector<Step>> steps = make_error(ErrorCode::kUnsupported, "barrier paths: architecture must be x64 or aarch64");
  if (arch == asmjit::Arch::kX64) {
    X86BarrierRegs regs = X86BarrierRegs::sysv(asmjit::x86::rdx);
    if (desc_register) regs.desc = asmjit::x86::rsi;
    steps = emit_steps<asmjit::x86::Builder>(arch, cfg, desc, regs, classify_x86);
  } else if (arch == asmjit::Arch::kAArch64) {
    A64BarrierRegs regs = A64BarrierRegs::art(asmjit::a64::x1);
    if (desc_register) regs.desc = asmjit::a64::x2;
    steps = emit_steps<asmjit::a64::Builder>(arch, cfg, desc, regs, classify_a64);
  }
  if (!steps) return std::move(steps).error();
  BarrierPaths p;
  for (const Step& s : *steps) p.emitted += s.label ? 0 : 1;
  if (cfg.compares_cache()) p.hit = walk(*steps, {true, false, false});
  p.mark = walk(*steps, {false, false, false});
  p.mark_bit_set = walk(*steps, {false, false, true});
  p.out_of_range = walk(*steps, {false, true, false});
  return p;
}

}  // namespace objprof::backends
