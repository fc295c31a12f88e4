// Shared parts of the elimination passes: results, descriptions, the `none` pass and the
// verifying driver.
#include "objprof/ir/elim.h"

#include <fmt/format.h>

namespace objprof::ir {

std::string_view pass_name(PassKind pass) {
  switch (pass) {
    case PassKind::kNone: return "none";
    case PassKind::kPaper: return "paper";
    case PassKind::kGlobal: return "global";
  }
  return "?";
}

std::string_view safepoint_mode_name(SafepointMode mode) { return mode == SafepointMode::kExact ? "exact" : "paper"; }

std::string_view reason_name(Reason reason) {
  switch (reason) {
    case Reason::kNoPass: return "no pass";
    case Reason::kUnreachable: return "unreachable block";
    case Reason::kNotAvailable: return "not available";
    case Reason::kDominated: return "dominated";
    case Reason::kAvailableAllPaths: return "available on all paths";
    case Reason::kAllocated: return "allocated this epoch";
    case Reason::kReceiver: return "receiver accessed by the caller";
    case Reason::kReturnedMarked: return "returned marked by the callee";
  }
  return "?";
}

std::size_t ElimResult::num_kept() const {
  std::size_t n = 0;
  for (const AccessDecision& d : accesses) n += d.kept ? 1 : 0;
  return n;
}

const AccessDecision* ElimResult::find(BlockId block, std::uint32_t instr, unsigned operand) const {
  if (block + 1 >= block_first.size()) return nullptr;
  for (std::uint32_t i = block_first[block]; i < block_first[block + 1]; ++i) {
    const AccessDecision& d = accesses[i];
    if (d.instr == instr && d.operand == operand) return &d;
    if (d.instr > instr) break;
  }
  return nullptr;
}

ElimResult make_all_kept(const Function& f) {
  ElimResult r;
  r.block_first.reserve(f.blocks.size() + 1);
  for (BlockId b = 0; b < f.blocks.size(); ++b) {
    r.block_first.push_back(static_cast<std::uint32_t>(r.accesses.size()));
    const Block& block = f.blocks[b];
    for (std::uint32_t i = 0; i < block.instrs.size(); ++i) {
      const Instr& in = block.instrs[i];
      unsigned n = num_accesses(in);
      for (unsigned k = 0; k < n; ++k) {
        r.accesses.push_back({b, i, static_cast<std::uint8_t>(k), in.site, in.args[k], true, Reason::kNoPass, kNoSite});
      }
    }
  }
  r.block_first.push_back(static_cast<std::uint32_t>(r.accesses.size()));
  return r;
}

ElimResult make_all_kept(const FunctionShape& shape) {
  ElimResult r;
  make_all_kept(shape, r);
  return r;
}

void make_all_kept(const FunctionShape& shape, ElimResult& r) {
  r = ElimResult{.accesses = std::move(r.accesses), .block_first = std::move(r.block_first)};
  r.accesses.clear();
  r.block_first.clear();
  const std::size_t n = shape.num_blocks();
  r.block_first.reserve(n + 1);
  for (BlockId b = 0; b < n; ++b) {
    r.block_first.push_back(static_cast<std::uint32_t>(r.accesses.size()));
    const InstrId first = shape.block_begin[b];
    for (InstrId k = first; k < shape.block_begin[b + 1]; ++k) {
      for (unsigned mask = shape.accessed[k], slot = 0; mask != 0; mask >>= 1, ++slot) {
        if ((mask & 1u) == 0) continue;
        r.accesses.push_back({b, k - first, static_cast<std::uint8_t>(slot), shape.site[k], shape.uses[shape.use_begin[k] + slot],
                              true, Reason::kNoPass, kNoSite});
      }
    }
  }
  r.block_first.push_back(static_cast<std::uint32_t>(r.accesses.size()));
}

std::string describe(const AccessDecision& d) {
  switch (d.reason) {
    case Reason::kNoPass: return "kept (no pass)";
    case Reason::kUnreachable: return "kept (unreachable block)";
    case Reason::kNotAvailable: return "kept";
    case Reason::kDominated: return fmt::format("removed (dominated by #{})", d.because);
    case Reason::kAvailableAllPaths:
      return d.because == kNoSite ? std::string("removed (available on all paths)")
                                  : fmt::format("removed (available on all paths from #{})", d.because);
    case Reason::kAllocated: return "removed (allocated this epoch)";
    case Reason::kReceiver: return "removed (receiver accessed by the caller)";
    case Reason::kReturnedMarked: return "removed (returned marked by the callee)";
  }
  return "?";
}

std::string annotate_instr(const ElimResult& result, BlockId block, std::uint32_t instr) {
  const AccessDecision* first = result.find(block, instr, 0);
  if (first == nullptr) return {};
  const AccessDecision* second = result.find(block, instr, 1);
  if (second == nullptr) return "barrier " + describe(*first);
  return fmt::format("v{}: {}; v{}: {}", first->reg, describe(*first), second->reg, describe(*second));
}

bool NoElimPass::run(const Function& f, FunctionAnalyses&, ElimResult* out) {
  *out = make_all_kept(f);
  out->pass = PassKind::kNone;
  return false;
}

Result<ElimResult> run_elim(const Function& f, const ElimOptions& options, const Module* module) {
  FunctionAnalyses am;
  return run_elim(f, options, module, am);
}

Result<ElimResult> run_elim(const Function& f, const ElimOptions& options, const Module* module, FunctionAnalyses& am) {
  OBJPROF_RETURN_IF_ERROR(verify_function(f, module));
  am.reset(f);
  ElimResult result;
  switch (options.pass) {
    case PassKind::kNone: NoElimPass().run(f, am, &result); break;
    case PassKind::kPaper: PaperElimPass(options).run(f, am, &result); break;
    case PassKind::kGlobal: GlobalElimPass(options).run(f, am, &result); break;
  }
  return result;
}

}  // namespace objprof::ir
