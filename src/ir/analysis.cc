// Structural verifier, CFG, dominator tree (Semi-NCA) and dominance frontiers (Cooper, Harvey,
// Kennedy's "runner" walk), with printers and verifiers. All walks are iterative so 100k-block
// functions cannot overflow the stack.
#include "objprof/ir/analysis.h"

#include "analysis_scratch.h"

#include "objprof/ir/text.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <numeric>
#include <unordered_set>

namespace objprof::ir {
namespace {

Error invalid(const Function& f, std::string message) {
  return make_error(ErrorCode::kInvalidArgument, fmt::format("function '{}': {}", f.name, message));
}

// Expected operand counts (min, max) per opcode; max 0xffff means "any".
std::pair<std::size_t, std::size_t> operand_range(Opcode op) {
  switch (op) {
    case Opcode::kConst: case Opcode::kNull: case Opcode::kNew: case Opcode::kSafepoint: case Opcode::kGoto:
      return {0, 0};
    case Opcode::kMove: case Opcode::kNewArray: case Opcode::kGetField: case Opcode::kArrayLength:
    case Opcode::kMonitorEnter: case Opcode::kMonitorExit: case Opcode::kBranch: case Opcode::kSwitch:
      return {1, 1};
    case Opcode::kBinary: case Opcode::kCompare: case Opcode::kPutField: case Opcode::kArrayGet: case Opcode::kRefEqual:
      return {2, 2};
    case Opcode::kArrayPut: return {3, 3};
    case Opcode::kInvoke: return {1, kMaxInvokeArgs};
    case Opcode::kCallStatic: return {0, kMaxInvokeArgs};
    case Opcode::kReturn: return {0, 1};
  }
  return {0, 0};
}

bool needs_dst(Opcode op) {
  switch (op) {
    case Opcode::kConst: case Opcode::kNull: case Opcode::kMove: case Opcode::kBinary: case Opcode::kCompare:
    case Opcode::kNew: case Opcode::kNewArray: case Opcode::kGetField: case Opcode::kArrayGet:
    case Opcode::kArrayLength: case Opcode::kRefEqual:
      return true;
    default:
      return false;
  }
}

bool allows_dst(Opcode op) { return needs_dst(op) || op == Opcode::kInvoke || op == Opcode::kCallStatic; }

}  // namespace

Status verify_function(const Function& f, const Module* module) {
  if (f.blocks.empty()) return invalid(f, "has no blocks");
  if (f.num_regs > kMaxRegs) return invalid(f, fmt::format("declares {} registers (limit {})", f.num_regs, kMaxRegs));
  for (Reg p : f.params) {
    if (p >= f.num_regs) return invalid(f, fmt::format("parameter v{} is not below regs {}", p, f.num_regs));
  }
  if (f.has_receiver && f.params.empty()) return invalid(f, "has a receiver but no parameters");
  std::unordered_set<SiteId> sites;
  for (BlockId b = 0; b < f.blocks.size(); ++b) {
    const Block& block = f.blocks[b];
    if (block.instrs.empty()) return invalid(f, fmt::format("block '{}' is empty (needs a terminator)", block.name));
    for (std::size_t i = 0; i < block.instrs.size(); ++i) {
      const Instr& in = block.instrs[i];
      auto where = [&] { return fmt::format("block '{}' instruction {} ({})", block.name, i, opcode_name(in.op)); };
      bool last = i + 1 == block.instrs.size();
      if (is_terminator(in.op) != last) {
        return invalid(f, last ? fmt::format("block '{}' does not end with a terminator", block.name)
                               : fmt::format("{}: terminator before the end of the block", where()));
      }
      auto [lo, hi] = operand_range(in.op);
      if (in.args.size() < lo || in.args.size() > hi) return invalid(f, fmt::format("{}: wrong operand count {}", where(), in.args.size()));
      if (needs_dst(in.op) && in.dst == kNoReg) return invalid(f, fmt::format("{}: missing destination", where()));
      if (!allows_dst(in.op) && in.dst != kNoReg) return invalid(f, fmt::format("{}: unexpected destination", where()));
      if (in.dst != kNoReg && in.dst >= f.num_regs) return invalid(f, fmt::format("{}: register v{} out of range", where(), in.dst));
      for (Reg r : in.args) {
        if (r >= f.num_regs) return invalid(f, fmt::format("{}: register v{} out of range", where(), r));
      }
      std::size_t want_targets = in.op == Opcode::kGoto ? 1 : in.op == Opcode::kBranch ? 2 : 0;
      if (in.op == Opcode::kSwitch ? in.targets.empty() : in.targets.size() != want_targets) {
        return invalid(f, fmt::format("{}: wrong number of targets", where()));
      }
      for (BlockId t : in.targets) {
        if (t >= f.blocks.size()) return invalid(f, fmt::format("{}: target block {} does not exist", where(), t));
        if (t == 0) return invalid(f, fmt::format("{}: branches to the entry block (the entry may have no predecessors)", where()));
      }
      if (is_access(in.op)) {
        if (in.site == kNoSite) return invalid(f, fmt::format("{}: access without a site id", where()));
        if (!sites.insert(in.site).second) return invalid(f, fmt::format("{}: duplicate site #{}", where(), in.site));
      }
      if (module != nullptr) {
        if (in.op == Opcode::kNew || in.op == Opcode::kGetField || in.op == Opcode::kPutField) {
          const Type* t = module->find_type(in.type);
          if (t == nullptr) return invalid(f, fmt::format("{}: unknown type '{}'", where(), in.type));
          if (in.op != Opcode::kNew && t->find_field(in.name) == nullptr) {
            return invalid(f, fmt::format("{}: type '{}' has no field '{}'", where(), in.type, in.name));
          }
        }
      }
    }
  }
  return Status::Ok();
}

// ---- CFG ----------------------------------------------------------------------------------

namespace {

// cfg.rpo := the blocks reachable from the entry, in reverse post-order of an iterative DFS that
// takes each block's successors in order.
void dfs_rpo(Cfg& cfg, CfgScratch& scratch) {
  const std::size_t n = cfg.succs.size();
  auto& post = scratch.post;
  post.clear();
  post.reserve(n);
  auto& seen = scratch.seen;
  seen.assign(n, 0);
  auto& stack = scratch.stack;
  stack.clear();
  stack.emplace_back(0, 0);
  seen[0] = 1;
  while (!stack.empty()) {
    auto& [b, next] = stack.back();
    auto succs = cfg.succs[b];
    if (next < succs.size()) {
      BlockId s = succs[next++];
      if (!seen[s]) {
        seen[s] = 1;
        stack.emplace_back(s, 0);
      }
    } else {
      post.push_back(b);
      stack.pop_back();
    }
  }
  cfg.rpo.assign(post.rbegin(), post.rend());
}

}  // namespace

// The CFG from raw successor lists (as a terminator or a VM lists them, duplicates allowed).
void run_cfg(const Adjacency& raw, Cfg& cfg, CfgScratch& scratch, BlockId known_rpo) {
  const std::size_t n = raw.size();
  cfg.rpo_index.assign(n, kNoBlock);
  cfg.rpo.clear();
  cfg.critical_edges.clear();
  cfg.unreachable.clear();
  // Successors, deduplicated, then predecessors by counting sort (so in block order).
  auto& so = cfg.succs.offsets_;
  auto& si = cfg.succs.items_;
  so.clear();
  si.clear();
  so.reserve(n + 1);
  si.reserve(raw.total());
  auto& pred_count = cfg.preds.offsets_;
  pred_count.assign(n + 1, 0);
  for (BlockId b = 0; b < n; ++b) {
    so.push_back(static_cast<std::uint32_t>(si.size()));
    const std::size_t first = si.size();
    for (BlockId t : raw[b]) {
      if (t >= n || std::find(si.begin() + static_cast<std::ptrdiff_t>(first), si.end(), t) != si.end()) continue;
      si.push_back(t);
      ++pred_count[t + 1];
    }
  }
  so.push_back(static_cast<std::uint32_t>(si.size()));
  for (std::size_t b = 0; b < n; ++b) pred_count[b + 1] += pred_count[b];
  auto& cursor = scratch.cursor;
  cursor.assign(pred_count.begin(), pred_count.end());
  cfg.preds.items_.resize(si.size());
  cfg.pred_position.resize(si.size());
  for (BlockId b = 0; b < n; ++b) {
    for (std::uint32_t e = so[b]; e < so[b + 1]; ++e) {
      const BlockId t = si[e];
      cfg.pred_position[e] = cursor[t] - pred_count[t];
      cfg.preds.items_[cursor[t]++] = b;
    }
  }
  if (n == 0) return;
  if (known_rpo != kNoBlock) {
    cfg.rpo.resize(known_rpo);
    std::iota(cfg.rpo.begin(), cfg.rpo.end(), BlockId{0});
  } else {
    dfs_rpo(cfg, scratch);
  }
  for (std::uint32_t i = 0; i < cfg.rpo.size(); ++i) cfg.rpo_index[cfg.rpo[i]] = i;
  for (BlockId b = 0; b < n; ++b) {
    if (!cfg.reachable(b)) {
      cfg.unreachable.push_back(b);
      continue;
    }
    if (cfg.succs[b].size() < 2) continue;
    for (BlockId s : cfg.succs[b]) {
      std::size_t reachable_preds = 0;
      for (BlockId p : cfg.preds[s]) reachable_preds += cfg.reachable(p) ? 1 : 0;
      if (reachable_preds > 1) cfg.critical_edges.emplace_back(b, s);
    }
  }
}

Cfg CfgAnalysis::run(const Function& f) {
  Adjacency raw;
  raw.offsets_.reserve(f.blocks.size() + 1);
  for (const Block& block : f.blocks) {
    raw.offsets_.push_back(static_cast<std::uint32_t>(raw.items_.size()));
    if (!block.instrs.empty()) raw.items_.insert(raw.items_.end(), block.instrs.back().targets.begin(), block.instrs.back().targets.end());
  }
  raw.offsets_.push_back(static_cast<std::uint32_t>(raw.items_.size()));
  Cfg cfg;
  CfgScratch scratch;
  run_cfg(raw, cfg, scratch);
  return cfg;
}

Cfg CfgAnalysis::run(const FunctionShape& shape) {
  Cfg cfg;
  CfgScratch scratch;
  run_cfg(shape.succs, cfg, scratch);
  return cfg;
}

std::string print_cfg(const Function& f, const Cfg& cfg) {
  std::string s = fmt::format("cfg of {}: {} blocks, {} reachable\n", f.name, f.blocks.size(), cfg.rpo.size());
  auto out = std::back_inserter(s);
  for (BlockId b = 0; b < f.blocks.size(); ++b) {
    fmt::format_to(out, "  {}{}: succs [", f.blocks[b].name, cfg.reachable(b) ? "" : " (unreachable)");
    for (std::size_t i = 0; i < cfg.succs[b].size(); ++i) fmt::format_to(out, "{}{}", i ? ", " : "", f.blocks[cfg.succs[b][i]].name);
    s += "] preds [";
    for (std::size_t i = 0; i < cfg.preds[b].size(); ++i) fmt::format_to(out, "{}{}", i ? ", " : "", f.blocks[cfg.preds[b][i]].name);
    s += "]\n";
  }
  s += "  critical edges:";
  for (auto [a, b] : cfg.critical_edges) fmt::format_to(out, " {}->{}", f.blocks[a].name, f.blocks[b].name);
  s += "\n";
  return s;
}

// ---- Dominator tree -----------------------------------------------------------------------

DomTree DominatorTreeAnalysis::run(const Cfg& cfg) {
  DomTree dt;
  DominatorScratch scratch;
  run_dominators(cfg, dt, scratch);
  return dt;
}

void run_dominators(const Cfg& cfg, DomTree& dt, DominatorScratch& scratch) {
  const std::size_t n = cfg.rpo_index.size();
  dt.idom.assign(n, kNoBlock);
  dt.children.offsets_.assign(n + 1, 0);
  dt.children.items_.clear();
  dt.pre.assign(n, kNoBlock);
  dt.post.assign(n, kNoBlock);
  if (cfg.rpo.empty()) return;
  // Semi-NCA (Georgiadis; as in LLVM's SemiNCA): semidominators by a reverse-preorder sweep
  // with path compression, then each idom as the nearest ancestor of the DFS parent whose
  // number is at most the semidominator's. Near-linear on any graph, where the iterative
  // algorithm's sweeps and `intersect` walks grow with unstructured control flow.
  // Vertices are DFS preorder numbers; 0 is the entry.
  const std::uint32_t m = static_cast<std::uint32_t>(cfg.rpo.size());
  auto& vertex = scratch.vertex;  // preorder number -> block
  vertex.clear();
  vertex.reserve(m);
  auto& num = scratch.num;
  auto& parent = scratch.parent;
  num.assign(n, kNoBlock);
  parent.assign(m, 0);
  {
    auto& stack = scratch.stack;
    stack.clear();
    const BlockId entry = cfg.rpo[0];
    num[entry] = 0;
    vertex.push_back(entry);
    stack.emplace_back(entry, 0);
    while (!stack.empty()) {
      auto& [b, next] = stack.back();
      auto succs = cfg.succs[b];
      if (next < succs.size()) {
        BlockId s = succs[next++];
        if (num[s] == kNoBlock) {
          auto v = static_cast<std::uint32_t>(vertex.size());
          num[s] = v;
          parent[v] = num[b];
          vertex.push_back(s);
          stack.emplace_back(s, 0);
        }
      } else {
        stack.pop_back();
      }
    }
  }
  auto& semi = scratch.semi;
  auto& label = scratch.label;
  auto& ancestor = scratch.ancestor;
  auto& idom = scratch.idom;
  auto& path = scratch.path;
  semi.resize(m);
  label.resize(m);
  ancestor.assign(m, kNoBlock);
  idom.assign(m, 0);
  for (std::uint32_t v = 0; v < m; ++v) semi[v] = label[v] = v;
  // eval(v): the vertex of smallest semi on the compressed forest path above v (v itself if v
  // is a root); compresses the path iteratively.
  auto eval = [&](std::uint32_t v) {
    if (ancestor[v] == kNoBlock) return v;
    path.clear();
    for (std::uint32_t u = v; ancestor[ancestor[u]] != kNoBlock; u = ancestor[u]) path.push_back(u);
    for (auto it = path.rbegin(); it != path.rend(); ++it) {
      std::uint32_t u = *it, a = ancestor[u];
      if (semi[label[a]] < semi[label[u]]) label[u] = label[a];
      ancestor[u] = ancestor[a];
    }
    return label[v];
  };
  for (std::uint32_t w = m - 1; w >= 1; --w) {
    for (BlockId p : cfg.preds[vertex[w]]) {
      std::uint32_t v = num[p];
      if (v == kNoBlock) continue;  // unreachable predecessor
      std::uint32_t u = eval(v);
      if (semi[u] < semi[w]) semi[w] = semi[u];
    }
    ancestor[w] = parent[w];
  }
  for (std::uint32_t w = 1; w < m; ++w) {
    std::uint32_t d = parent[w];
    while (d > semi[w]) d = idom[d];
    idom[w] = d;
  }
  auto& edges = scratch.edges;
  edges.clear();
  edges.reserve(m);
  for (std::uint32_t i = 1; i < m; ++i) {
    BlockId b = cfg.rpo[i];
    dt.idom[b] = vertex[idom[num[b]]];
    edges.emplace_back(dt.idom[b], b);  // RPO order, since i increases
  }
  dt.children.assign_from_pairs(n, edges);
  // Pre/post numbering of the tree (iterative).
  std::uint32_t counter = 0;
  auto& stack = scratch.stack;
  stack.clear();
  stack.emplace_back(cfg.rpo[0], 0);
  dt.pre[cfg.rpo[0]] = counter++;
  while (!stack.empty()) {
    auto& [b, next] = stack.back();
    if (next < dt.children[b].size()) {
      BlockId c = dt.children[b][next++];
      dt.pre[c] = counter++;
      stack.emplace_back(c, 0);
    } else {
      dt.post[b] = counter++;
      stack.pop_back();
    }
  }
}

std::string print_domtree(const Function& f, const DomTree& dt) {
  std::string s = fmt::format("dominator tree of {}:\n", f.name);
  auto out = std::back_inserter(s);
  for (BlockId b = 0; b < f.blocks.size(); ++b) {
    if (dt.pre[b] == kNoBlock) {
      fmt::format_to(out, "  {}: unreachable\n", f.blocks[b].name);
    } else if (dt.idom[b] == kNoBlock) {
      fmt::format_to(out, "  {}: root\n", f.blocks[b].name);
    } else {
      fmt::format_to(out, "  {}: idom {}\n", f.blocks[b].name, f.blocks[dt.idom[b]].name);
    }
  }
  return s;
}

Status verify_domtree(const Function& f, const Cfg& cfg, const DomTree& dt, std::size_t max_blocks) {
  const std::size_t n = f.blocks.size();
  for (BlockId b = 0; b < n; ++b) {
    bool reach = cfg.reachable(b);
    if (reach != (dt.pre[b] != kNoBlock)) return invalid(f, fmt::format("domtree: block '{}' reachability mismatch", f.blocks[b].name));
    if (!reach || b == cfg.rpo[0]) continue;
    BlockId d = dt.idom[b];
    if (d == kNoBlock || !cfg.reachable(d)) return invalid(f, fmt::format("domtree: block '{}' has no idom", f.blocks[b].name));
    // The idom dominates every reachable predecessor.
    for (BlockId p : cfg.preds[b]) {
      if (cfg.reachable(p) && !dt.dominates(d, p)) {
        return invalid(f, fmt::format("domtree: idom '{}' of '{}' does not dominate predecessor '{}'", f.blocks[d].name,
                                      f.blocks[b].name, f.blocks[p].name));
      }
    }
  }
  if (n > max_blocks || cfg.rpo.empty()) return Status::Ok();
  // Reference: Dom(entry) = {entry}; Dom(b) = {b} U intersection of Dom(p) over reachable preds.
  const std::size_t words = (n + 63) / 64;
  std::vector<std::uint64_t> dom(n * words, ~0ull);
  BlockId entry = cfg.rpo[0];
  std::fill(dom.begin() + static_cast<std::ptrdiff_t>(entry * words), dom.begin() + static_cast<std::ptrdiff_t>((entry + 1) * words), 0ull);
  dom[entry * words + entry / 64] |= 1ull << (entry % 64);
  bool changed = true;
  std::vector<std::uint64_t> tmp(words);
  while (changed) {
    changed = false;
    for (BlockId b : cfg.rpo) {
      if (b == entry) continue;
      std::fill(tmp.begin(), tmp.end(), ~0ull);
      for (BlockId p : cfg.preds[b]) {
        if (!cfg.reachable(p)) continue;
        for (std::size_t w = 0; w < words; ++w) tmp[w] &= dom[p * words + w];
      }
      tmp[b / 64] |= 1ull << (b % 64);
      for (std::size_t w = 0; w < words; ++w) {
        if (dom[b * words + w] != tmp[w]) {
          dom[b * words + w] = tmp[w];
          changed = true;
        }
      }
    }
  }
  for (BlockId b : cfg.rpo) {
    for (BlockId a : cfg.rpo) {
      bool ref = (dom[b * words + a / 64] >> (a % 64)) & 1;
      if (ref != dt.dominates(a, b)) {
        return invalid(f, fmt::format("domtree: '{}' {} '{}' but the tree says otherwise", f.blocks[a].name,
                                      ref ? "dominates" : "does not dominate", f.blocks[b].name));
      }
    }
  }
  return Status::Ok();
}

// ---- Dominance frontiers ------------------------------------------------------------------

DominanceFrontiers DominanceFrontierAnalysis::run(const Cfg& cfg, const DomTree& dt) {
  DominanceFrontiers df;
  FrontierScratch scratch;
  run_frontiers(cfg, dt, df, scratch);
  return df;
}

void run_frontiers(const Cfg& cfg, const DomTree& dt, DominanceFrontiers& df, FrontierScratch& scratch) {
  const std::size_t n = cfg.rpo_index.size();
  auto& entries = scratch.entries;  // (runner, frontier block)
  entries.clear();
  auto& last = scratch.last;        // last frontier block added per runner
  last.assign(n, kNoBlock);
  for (BlockId b : cfg.rpo) {
    std::size_t reachable_preds = 0;
    for (BlockId p : cfg.preds[b]) reachable_preds += cfg.reachable(p) ? 1 : 0;
    if (reachable_preds < 2) continue;
    for (BlockId p : cfg.preds[b]) {
      if (!cfg.reachable(p)) continue;
      BlockId runner = p;
      while (runner != kNoBlock && runner != dt.idom[b]) {
        // All insertions of b happen in this loop, so a duplicate would be the last one.
        if (last[runner] != b) {
          last[runner] = b;
          entries.emplace_back(runner, b);
        }
        runner = dt.idom[runner];
      }
    }
  }
  df.df.assign_from_pairs(n, entries);
}

std::string print_frontiers(const Function& f, const DominanceFrontiers& df) {
  std::string s = fmt::format("dominance frontiers of {}:\n", f.name);
  auto out = std::back_inserter(s);
  for (BlockId b = 0; b < f.blocks.size(); ++b) {
    std::vector<BlockId> sorted(df.df[b].begin(), df.df[b].end());
    std::sort(sorted.begin(), sorted.end());
    fmt::format_to(out, "  {}: {{", f.blocks[b].name);
    for (std::size_t i = 0; i < sorted.size(); ++i) fmt::format_to(out, "{}{}", i ? ", " : "", f.blocks[sorted[i]].name);
    s += "}\n";
  }
  return s;
}

Status verify_frontiers(const Function& f, const Cfg& cfg, const DomTree& dt, const DominanceFrontiers& df) {
  // Definition-based check; quadratic, so only used on small functions.
  if (f.blocks.size() > 1000) return Status::Ok();
  for (BlockId x : cfg.rpo) {
    std::vector<BlockId> want;
    for (BlockId y : cfg.rpo) {
      bool strictly = x != y && dt.dominates(x, y);
      if (strictly) continue;
      for (BlockId p : cfg.preds[y]) {
        if (cfg.reachable(p) && dt.dominates(x, p)) {
          want.push_back(y);
          break;
        }
      }
    }
    std::vector<BlockId> got(df.df[x].begin(), df.df[x].end());
    std::sort(want.begin(), want.end());
    std::sort(got.begin(), got.end());
    if (want != got) return invalid(f, fmt::format("frontiers: DF('{}') is wrong", f.blocks[x].name));
  }
  return Status::Ok();
}

// ---- Analysis manager ---------------------------------------------------------------------

FunctionAnalyses::FunctionAnalyses() : scratch_(std::make_unique<AnalysisScratch>()) {}
FunctionAnalyses::FunctionAnalyses(const Function& f) : FunctionAnalyses() { f_ = &f; }
FunctionAnalyses::FunctionAnalyses(const FunctionShape& shape) : FunctionAnalyses() { shape_ptr_ = &shape; }
FunctionAnalyses::~FunctionAnalyses() = default;

void FunctionAnalyses::reset(const Function& f) {
  invalidate();
  f_ = &f;
  shape_ptr_ = nullptr;
}
void FunctionAnalyses::reset(const FunctionShape& shape) {
  invalidate();
  f_ = nullptr;
  shape_ptr_ = &shape;
}
void FunctionAnalyses::reset_in_rpo(const FunctionShape& shape, std::uint32_t num_reachable) {
  reset(shape);
  known_rpo_ = num_reachable;
}

const FunctionShape& FunctionAnalyses::shape() {
  if (shape_ptr_ == nullptr) {
    shape_of(*f_, own_shape_);
    shape_ptr_ = &own_shape_;
  }
  return *shape_ptr_;
}
const Cfg& FunctionAnalyses::cfg() {
  if ((valid_ & kCfgValid) == 0) {
    run_cfg(shape().succs, cfg_, scratch_->cfg, known_rpo_);
    valid_ |= kCfgValid;
  }
  return cfg_;
}
const DomTree& FunctionAnalyses::domtree() {
  if ((valid_ & kDomTreeValid) == 0) {
    run_dominators(cfg(), dt_, scratch_->dominators);
    valid_ |= kDomTreeValid;
  }
  return dt_;
}
const DominanceFrontiers& FunctionAnalyses::frontiers() {
  if ((valid_ & kFrontiersValid) == 0) {
    run_frontiers(cfg(), domtree(), df_, scratch_->frontiers);
    valid_ |= kFrontiersValid;
  }
  return df_;
}
const SsaForm& FunctionAnalyses::ssa() {
  if ((valid_ & kSsaValid) == 0) {
    run_ssa(shape(), cfg(), domtree(), frontiers(), ssa_, scratch_->ssa);
    valid_ |= kSsaValid;
  }
  return ssa_;
}
AnalysisScratch& FunctionAnalyses::scratch() { return *scratch_; }
void FunctionAnalyses::invalidate() {
  valid_ = 0;
  known_rpo_ = kNoBlock;
  if (shape_ptr_ == &own_shape_) shape_ptr_ = nullptr;
}

}  // namespace objprof::ir
