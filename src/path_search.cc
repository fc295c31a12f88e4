// The breadth-first search of path_search.h. Memory per visited object: a 16-byte node (address,
// parent, ordinal of the parent's reference that led here) and at most two 4-byte slots of an
// open-addressing index (address -> node), kept at most half full. Nodes are appended in BFS
// order, so the node array is also the queue and its level boundaries give each node's depth.
#include "objprof/path_search.h"

#include <fmt/core.h>

#include <algorithm>
#include <bit>

namespace objprof {
namespace {

constexpr std::uint32_t kFromRoot = 0xFFFF'FFFFu;  // parent of a node a root refers to
constexpr std::uint32_t kNone = 0xFFFF'FFFFu;

struct Node {
  Address addr;
  std::uint32_t parent;   // node index, or kFromRoot
  std::uint32_t ordinal;  // which reference of the parent (or which root) led here
};
static_assert(sizeof(Node) == 16);

struct Root {
  RootKind kind;
  std::uint64_t token;
};

class Search final : public RootVisitor, public ReferenceVisitor {
 public:
  Search(HeapWalker& walker, std::span<const Address> targets, const PathSearchOptions& options)
      : walker_(walker), options_(options) {
    for (Address t : targets)
      if (t != 0) wanted_.push_back(t);
    std::sort(wanted_.begin(), wanted_.end());
    wanted_.erase(std::unique(wanted_.begin(), wanted_.end()), wanted_.end());
    found_.assign(wanted_.size(), kNone);
    index_.assign(1024, 0);
  }

  void run() {
    if (wanted_.empty()) return;
    if (options_.max_depth == 0) {  // not even a root's referent may be visited
      depth_limited_ = true;
      return;
    }
    walker_.roots(*this);
    // Level by level: nodes [level_begin, level_end) are at depth `depth`.
    std::uint32_t depth = 1;
    std::size_t level_end = nodes_.size();
    for (std::size_t i = 0; i < nodes_.size() && !done(); ++i) {
      if (i == level_end) {
        ++depth;
        level_end = nodes_.size();
      }
      if (depth >= options_.max_depth) {
        // Everything from here on is at the depth limit: its references would go deeper.
        depth_limited_ = true;
        break;
      }
      parent_ = static_cast<std::uint32_t>(i);
      ordinal_ = 0;
      walker_.references(nodes_[i].addr, *this);
      if (budget_hit_) break;
    }
  }

  PathSearchResult result(Address target) {
    PathSearchResult r;
    r.objects_visited = nodes_.size();
    const auto it = std::lower_bound(wanted_.begin(), wanted_.end(), target);
    const std::uint32_t node = it != wanted_.end() && *it == target ? found_[static_cast<std::size_t>(it - wanted_.begin())] : kNone;
    if (node == kNone) {
      r.status = budget_hit_ ? PathStatus::kObjectBudget : depth_limited_ ? PathStatus::kDepthLimit : PathStatus::kUnreachable;
      return r;
    }
    r.status = PathStatus::kFound;
    std::vector<std::uint32_t> chain;
    for (std::uint32_t n = node; n != kFromRoot; n = nodes_[n].parent) chain.push_back(n);
    std::reverse(chain.begin(), chain.end());
    const Root& root = roots_[nodes_[chain.front()].ordinal];
    r.path.root_kind = root.kind;
    r.path.root_name = walker_.root_name(root.kind, root.token);
    for (std::size_t k = 0; k < chain.size(); ++k) {
      const Node& n = nodes_[chain[k]];
      PathStep s;
      s.addr = n.addr;
      s.type_id = walker_.type_id(n.addr);
      if (k > 0) s.via = label_of(nodes_[n.parent].addr, n.ordinal, n.addr);
      r.path.steps.push_back(std::move(s));
    }
    return r;
  }

  void root(RootKind kind, std::uint64_t token, Address target) override {
    const auto r = static_cast<std::uint32_t>(roots_.size());
    roots_.push_back({kind, token});
    discover(target, kFromRoot, r);
  }
  void field(std::string_view, Address target) override { discover(target, parent_, ordinal_++); }
  void element(std::uint64_t, Address target) override { discover(target, parent_, ordinal_++); }

 private:
  bool done() const { return found_count_ == wanted_.size(); }

  // Finds the label of reference number `ordinal` of `holder` by walking its references again
  // (only for the steps of a path found, so the search stores no labels).
  std::string label_of(Address holder, std::uint32_t ordinal, Address target) {
    struct Finder final : ReferenceVisitor {
      std::uint32_t want, at = 0;
      Address target;
      std::string label;
      bool matched = false;
      void field(std::string_view name, Address t) override {
        if (at++ == want && t == target) {
          label.assign(name);
          matched = true;
        }
      }
      void element(std::uint64_t index, Address t) override {
        if (at++ == want && t == target) {
          label = fmt::format("[{}]", index);
          matched = true;
        }
      }
    } f;
    f.want = ordinal;
    f.target = target;
    walker_.references(holder, f);
    // A walker that enumerates differently the second time breaks its contract; say so.
    return f.matched ? f.label : std::string("<reference not found again>");
  }

  static std::uint64_t hash(Address a) { return (a >> 3) * 0x9E37'79B9'7F4A'7C15ull; }

  void discover(Address a, std::uint32_t parent, std::uint32_t ordinal) {
    if (a == 0 || done() || budget_hit_) return;
    const std::uint64_t mask = index_.size() - 1;
    std::uint64_t h = hash(a) >> shift_;
    for (;; h = (h + 1) & mask) {
      const std::uint32_t e = index_[h];
      if (e == 0) break;
      if (nodes_[e - 1].addr == a) return;  // seen: BFS keeps the first (shortest) way in
    }
    // Node indexes are 32-bit (index_ stores index + 1).
    if (nodes_.size() >= std::min<std::uint64_t>(options_.max_objects, 0xFFFF'FFFEu)) {
      budget_hit_ = true;
      return;
    }
    nodes_.push_back({a, parent, ordinal});
    index_[h] = static_cast<std::uint32_t>(nodes_.size());
    if (2 * nodes_.size() > index_.size()) grow();
    const auto it = std::lower_bound(wanted_.begin(), wanted_.end(), a);
    if (it != wanted_.end() && *it == a) {
      found_[static_cast<std::size_t>(it - wanted_.begin())] = static_cast<std::uint32_t>(nodes_.size() - 1);
      ++found_count_;
    }
  }

  void grow() {
    index_.assign(index_.size() * 2, 0);
    shift_ = static_cast<unsigned>(64 - std::countr_zero(index_.size()));
    const std::uint64_t mask = index_.size() - 1;
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      std::uint64_t h = hash(nodes_[i].addr) >> shift_;
      while (index_[h] != 0) h = (h + 1) & mask;
      index_[h] = static_cast<std::uint32_t>(i + 1);
    }
  }

  HeapWalker& walker_;
  PathSearchOptions options_;
  std::vector<Address> wanted_;     // sorted, unique, non-null
  std::vector<std::uint32_t> found_;  // node of wanted_[i], or kNone
  std::size_t found_count_ = 0;
  std::vector<Root> roots_;
  std::vector<Node> nodes_;
  std::vector<std::uint32_t> index_;  // node index + 1, 0 = empty
  unsigned shift_ = 64 - 10;          // log2(index_.size()) top bits of the hash
  std::uint32_t parent_ = 0, ordinal_ = 0;
  bool budget_hit_ = false, depth_limited_ = false;
};

}  // namespace

std::vector<PathSearchResult> find_paths(HeapWalker& walker, std::span<const Address> targets, const PathSearchOptions& options) {
  std::vector<PathSearchResult> out;
  if (targets.empty() || !walker.begin_walk()) return out;
  Search s(walker, targets, options);
  s.run();
  out.reserve(targets.size());
  for (Address t : targets) out.push_back(s.result(t));
  walker.end_walk();
  return out;
}

std::optional<PathSearchResult> find_path(HeapWalker& walker, Address target, const PathSearchOptions& options) {
  auto r = find_paths(walker, std::span<const Address>(&target, 1), options);
  if (r.empty()) return std::nullopt;
  return std::move(r.front());
}

}  // namespace objprof
