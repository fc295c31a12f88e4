#include "block_layout.h"

namespace objprof::ir {
namespace {

// old_of := the blocks in RPO, then the unreachable ones in id order. The walk is run_cfg's:
// successors in order, a block entered at its first sighting; a repeated or out-of-range
// successor is skipped, which is what the CFG's deduplicated list does.
void rpo_then_unreachable(const FunctionShape& in, RpoLayout& out) {
  const std::size_t n = in.num_blocks();
  auto& post = out.new_of;  // borrowed: the post-order, reversed into old_of below
  post.clear();
  auto& seen = out.seen;
  seen.assign(n, 0);
  auto& stack = out.stack;
  stack.clear();
  stack.emplace_back(0, in.succs.offsets_[0]);
  seen[0] = 1;
  const std::uint32_t* offsets = in.succs.offsets_.data();
  const BlockId* succs = in.succs.items_.data();
  while (!stack.empty()) {
    auto& [b, next] = stack.back();
    if (next < offsets[b + 1]) {
      const BlockId s = succs[next++];
      if (s < n && !seen[s]) {
        seen[s] = 1;
        stack.emplace_back(s, offsets[s]);
      }
    } else {
      post.push_back(b);
      stack.pop_back();
    }
  }
  auto& old_of = out.old_of;
  old_of.assign(post.rbegin(), post.rend());
  out.num_reachable = static_cast<std::uint32_t>(old_of.size());
  for (BlockId b = 0; b < n; ++b) {
    if (!seen[b]) old_of.push_back(b);
  }
}

}  // namespace

bool lay_out_in_rpo(const FunctionShape& in, RpoLayout& out, bool only_if_scattered) {
  const std::size_t n = in.num_blocks();
  if (n == 0) return false;
  rpo_then_unreachable(in, out);
  const auto& old_of = out.old_of;
  std::size_t moved = 0, far = 0;
  for (BlockId i = 1; i < n; ++i) {
    const std::int64_t skip = static_cast<std::int64_t>(old_of[i]) - old_of[i - 1] - 1;  // 0: the next block
    moved += old_of[i] != i;
    far += skip >= kFarStep || skip <= -static_cast<std::int64_t>(kFarStep);
  }
  if (moved == 0 || (only_if_scattered && far * kScatteredShare < n)) return false;
  auto& new_of = out.new_of;
  new_of.resize(n);
  for (BlockId i = 0; i < n; ++i) new_of[old_of[i]] = i;

  FunctionShape& s = out.shape;
  s.num_regs = in.num_regs;
  s.receiver = in.receiver;
  const std::size_t num_instrs = in.num_instrs();
  // Every element below is written, so nothing is cleared: resize keeps an earlier function's
  // storage and zero-fills only what it did not reach.
  s.block_begin.resize(n + 1);
  s.succs.offsets_.resize(n + 1);
  s.succs.items_.resize(in.succs.items_.size());
  s.dst.resize(num_instrs);
  s.use_begin.resize(num_instrs + 1);
  s.flags.resize(num_instrs);
  s.accessed.resize(num_instrs);
  s.site.resize(num_instrs);
  s.uses.resize(in.uses.size());
  // Local pointers: the stores below would otherwise make the compiler reload every vector's.
  const Reg* in_dst = in.dst.data();
  const std::uint8_t* in_flags = in.flags.data();
  const std::uint8_t* in_accessed = in.accessed.data();
  const SiteId* in_site = in.site.data();
  const std::uint32_t* in_use_begin = in.use_begin.data();
  const Reg* in_uses = in.uses.data();
  const std::uint32_t* in_succ_begin = in.succs.offsets_.data();
  const BlockId* in_succs = in.succs.items_.data();
  Reg* dst = s.dst.data();
  std::uint8_t* flags = s.flags.data();
  std::uint8_t* accessed = s.accessed.data();
  SiteId* site = s.site.data();
  std::uint32_t* use_begin = s.use_begin.data();
  Reg* uses = s.uses.data();
  BlockId* succs = s.succs.items_.data();
  InstrId k = 0;
  std::uint32_t u = 0, e = 0;
  for (BlockId i = 0; i < n; ++i) {
    const BlockId b = old_of[i];
    s.block_begin[i] = k;
    s.succs.offsets_[i] = e;
    const InstrId first = in.block_begin[b], last = in.block_begin[b + 1];
    const std::uint32_t count = last - first;
    const std::uint32_t u0 = in.use_begin[first], u1 = in.use_begin[last];
    // Element loops, not copy_n: blocks hold a few instructions, and a memmove call per array
    // and block cost as much as the copying.
    for (std::uint32_t j = 0; j < count; ++j) {
      dst[k + j] = in_dst[first + j];
      flags[k + j] = in_flags[first + j];
      accessed[k + j] = in_accessed[first + j];
      site[k + j] = in_site[first + j];
      use_begin[k + j] = in_use_begin[first + j] - u0 + u;
    }
    for (std::uint32_t j = 0; j < u1 - u0; ++j) uses[u + j] = in_uses[u0 + j];
    // A successor out of range stays out of range: the CFG drops it, as it does for the original.
    for (std::uint32_t x = in_succ_begin[b]; x < in_succ_begin[b + 1]; ++x) {
      const BlockId t = in_succs[x];
      succs[e++] = t < n ? new_of[t] : t;
    }
    k += count;
    u += u1 - u0;
  }
  s.block_begin[n] = k;
  s.use_begin[num_instrs] = u;
  s.succs.offsets_[n] = e;
  return true;
}

}  // namespace objprof::ir
