// The flat description of a function for the analyses: built from objprof's IR, or by a VM
// through FunctionShapeBuilder, and checked by verify_shape.
#include "objprof/ir/function_shape.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>

namespace objprof::ir {
namespace {

Error invalid_shape(std::string message) {
  return make_error(ErrorCode::kInvalidArgument, fmt::format("function shape: {}", message));
}

template <class V>
std::size_t bytes_of(const V& v) {
  return v.capacity() * sizeof(typename V::value_type);
}

}  // namespace

std::size_t FunctionShape::memory_bytes() const {
  return bytes_of(block_begin) + bytes_of(succs.offsets_) + bytes_of(succs.items_) + bytes_of(dst) +
         bytes_of(use_begin) + bytes_of(flags) + bytes_of(accessed) + bytes_of(site) + bytes_of(uses);
}

FunctionShape shape_of(const Function& f) {
  FunctionShape s;
  shape_of(f, s);
  return s;
}

void shape_of(const Function& f, FunctionShape& s) {
  s.num_regs = f.num_regs;
  s.receiver = f.has_receiver && !f.params.empty() ? f.params[0] : kNoReg;
  s.block_begin.clear();
  s.succs.offsets_.clear();
  s.succs.items_.clear();
  s.dst.clear();
  s.use_begin.clear();
  s.flags.clear();
  s.accessed.clear();
  s.site.clear();
  s.uses.clear();
  const std::size_t n = f.blocks.size();
  std::size_t instrs = 0;
  for (const Block& b : f.blocks) instrs += b.instrs.size();
  s.block_begin.reserve(n + 1);
  s.succs.offsets_.reserve(n + 1);
  s.succs.items_.reserve(n * 2);
  s.dst.reserve(instrs);
  s.use_begin.reserve(instrs + 1);
  s.flags.reserve(instrs);
  s.accessed.reserve(instrs);
  s.site.reserve(instrs);
  s.uses.reserve(instrs * 2);
  for (const Block& block : f.blocks) {
    s.block_begin.push_back(static_cast<InstrId>(s.dst.size()));
    s.succs.offsets_.push_back(static_cast<std::uint32_t>(s.succs.items_.size()));
    for (const Instr& in : block.instrs) {
      s.dst.push_back(in.dst);
      s.use_begin.push_back(static_cast<std::uint32_t>(s.uses.size()));
      s.uses.insert(s.uses.end(), in.args.begin(), in.args.end());
      std::uint8_t flags = 0;
      if (may_gc(in)) flags |= FunctionShape::kMayGc;
      if (in.op == Opcode::kMove && in.args.size() == 1) flags |= FunctionShape::kCopy;
      if ((in.op == Opcode::kNew || in.op == Opcode::kNewArray) && in.dst != kNoReg) flags |= FunctionShape::kAllocates;
      if ((in.op == Opcode::kInvoke || in.op == Opcode::kCallStatic) && in.result_marked && in.dst != kNoReg) {
        flags |= FunctionShape::kResultMarked;
      }
      if (in.op == Opcode::kReturn && in.args.size() == 1) flags |= FunctionShape::kReturns;
      s.flags.push_back(flags);
      unsigned na = num_accesses(in);
      s.accessed.push_back(static_cast<std::uint8_t>((1u << na) - 1));
      s.site.push_back(na != 0 ? in.site : kNoSite);
    }
    if (!block.instrs.empty()) {
      const auto& targets = block.instrs.back().targets;
      s.succs.items_.insert(s.succs.items_.end(), targets.begin(), targets.end());
    }
  }
  s.block_begin.push_back(static_cast<InstrId>(s.dst.size()));
  s.succs.offsets_.push_back(static_cast<std::uint32_t>(s.succs.items_.size()));
  s.use_begin.push_back(static_cast<std::uint32_t>(s.uses.size()));
}

Status verify_shape(const FunctionShape& s) {
  const std::size_t n = s.num_blocks();
  const std::size_t m = s.num_instrs();
  if (n == 0) return invalid_shape("has no blocks");
  if (s.num_regs > kMaxRegs) return invalid_shape(fmt::format("declares {} registers (limit {})", s.num_regs, kMaxRegs));
  if (s.block_begin.front() != 0 || s.block_begin.back() != m) return invalid_shape("block ranges do not cover the instructions");
  if (!std::is_sorted(s.block_begin.begin(), s.block_begin.end())) return invalid_shape("block ranges are not in order");
  if (s.flags.size() != m || s.accessed.size() != m || s.site.size() != m || s.use_begin.size() != m + 1) {
    return invalid_shape("per-instruction arrays differ in length");
  }
  if (s.use_begin.front() != 0 || s.use_begin.back() != s.uses.size() || !std::is_sorted(s.use_begin.begin(), s.use_begin.end())) {
    return invalid_shape("operand ranges do not cover the operands");
  }
  if (s.succs.size() != n || s.succs.offsets_.front() != 0 || s.succs.offsets_.back() != s.succs.items_.size() ||
      !std::is_sorted(s.succs.offsets_.begin(), s.succs.offsets_.end())) {
    return invalid_shape("successor lists do not match the blocks");
  }
  for (BlockId t : s.succs.items_) {
    if (t >= n) return invalid_shape(fmt::format("successor block {} does not exist ({} blocks)", t, n));
    if (t == 0) return invalid_shape("a block branches to the entry block (the entry may have no predecessors)");
  }
  if (s.receiver != kNoReg && s.receiver >= s.num_regs) {
    return invalid_shape(fmt::format("receiver register {} is not below {}", s.receiver, s.num_regs));
  }
  for (Reg r : s.uses) {
    if (r >= s.num_regs) return invalid_shape(fmt::format("operand register {} is not below {}", r, s.num_regs));
  }
  std::vector<SiteId> sites;
  for (InstrId i = 0; i < m; ++i) {
    if (s.dst[i] != kNoReg && s.dst[i] >= s.num_regs) {
      return invalid_shape(fmt::format("instruction {} defines register {}, not below {}", i, s.dst[i], s.num_regs));
    }
    std::size_t nops = s.use_begin[i + 1] - s.use_begin[i];
    if (s.accessed[i] != 0) {
      unsigned highest = 7u - static_cast<unsigned>(std::countl_zero(s.accessed[i]));
      if (highest >= nops) return invalid_shape(fmt::format("instruction {} accesses operand {} of {}", i, highest, nops));
      if (s.site[i] == kNoSite) return invalid_shape(fmt::format("instruction {} accesses an object without a site", i));
      sites.push_back(s.site[i]);
    }
    if ((s.allocates(i) || s.result_marked(i)) && s.dst[i] == kNoReg) {
      return invalid_shape(fmt::format("instruction {} allocates or returns a marked object but defines no register", i));
    }
    if (s.returns_value(i) && nops != 1) {
      return invalid_shape(fmt::format("instruction {} returns a value but has {} operands", i, nops));
    }
    if (s.is_copy(i) && (nops != 1 || s.dst[i] == kNoReg)) {
      return invalid_shape(fmt::format("instruction {} is a copy but does not define one register from one operand", i));
    }
  }
  std::sort(sites.begin(), sites.end());
  auto dup = std::adjacent_find(sites.begin(), sites.end());
  if (dup != sites.end()) return invalid_shape(fmt::format("duplicate site #{}", *dup));
  return Status::Ok();
}

FunctionShapeBuilder::FunctionShapeBuilder(std::uint32_t num_regs) {
  s_.num_regs = num_regs;
  s_.succs.offsets_.push_back(0);
}

BlockId FunctionShapeBuilder::begin_block() {
  if (open_) close_block();
  open_ = true;
  s_.block_begin.push_back(static_cast<InstrId>(s_.dst.size()));
  return static_cast<BlockId>(s_.block_begin.size() - 1);
}

void FunctionShapeBuilder::close_block() {
  s_.succs.offsets_.push_back(static_cast<std::uint32_t>(s_.succs.items_.size()));
  open_ = false;
}

void FunctionShapeBuilder::add_instr(Reg dst, std::span<const Reg> uses, std::uint8_t accessed, std::uint8_t flags,
                                     SiteId site) {
  if (!open_) begin_block();
  s_.dst.push_back(dst);
  s_.use_begin.push_back(static_cast<std::uint32_t>(s_.uses.size()));
  s_.uses.insert(s_.uses.end(), uses.begin(), uses.end());
  s_.flags.push_back(flags);
  s_.accessed.push_back(accessed);
  s_.site.push_back(site);
}

void FunctionShapeBuilder::add_successor(BlockId target) {
  if (!open_) begin_block();
  s_.succs.items_.push_back(target);
}

Result<FunctionShape> FunctionShapeBuilder::finish() && {
  if (open_) close_block();
  s_.block_begin.push_back(static_cast<InstrId>(s_.dst.size()));
  s_.use_begin.push_back(static_cast<std::uint32_t>(s_.uses.size()));
  Status st = verify_shape(s_);
  if (!st.ok()) return st.error();
  return std::move(s_);
}

}  // namespace objprof::ir
