// One list per index, all in one array (compressed sparse rows): list(i) is a span. The
// analyses keep successors, predecessors, dominator-tree children, frontiers and phis this way
// so that a 100k-block function costs two allocations per relation instead of one per block.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace objprof::ir {

template <class T>
class CsrLists {
 public:
  std::span<const T> operator[](std::size_t i) const {
    return {items_.data() + offsets_[i], static_cast<std::size_t>(offsets_[i + 1] - offsets_[i])};
  }
  std::span<T> mutable_list(std::size_t i) {
    return {items_.data() + offsets_[i], static_cast<std::size_t>(offsets_[i + 1] - offsets_[i])};
  }
  std::vector<T> copy_of(std::size_t i) const {
    auto list = (*this)[i];
    return {list.begin(), list.end()};
  }
  std::size_t size() const { return offsets_.empty() ? 0 : offsets_.size() - 1; }
  std::size_t total() const { return items_.size(); }

  // Builds the lists from (index, item) pairs by a stable counting sort: items keep the order
  // in which they were given within each list.
  static CsrLists from_pairs(std::size_t lists, const std::vector<std::pair<std::uint32_t, T>>& pairs) {
    CsrLists c;
    c.offsets_.assign(lists + 1, 0);
    for (const auto& p : pairs) ++c.offsets_[p.first + 1];
    for (std::size_t i = 0; i < lists; ++i) c.offsets_[i + 1] += c.offsets_[i];
    c.items_.resize(pairs.size());
    std::vector<std::uint32_t> fill(c.offsets_.begin(), c.offsets_.end() - 1);
    for (const auto& p : pairs) c.items_[fill[p.first]++] = p.second;
    return c;
  }

  std::vector<std::uint32_t> offsets_;  // size() + 1 entries
  std::vector<T> items_;
};

}  // namespace objprof::ir
