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
    c.assign_from_pairs(lists, pairs);
    return c;
  }
  // The same into this object, reusing its storage.
  void assign_from_pairs(std::size_t lists, const std::vector<std::pair<std::uint32_t, T>>& pairs) {
    // Counts at [i + 2], so that after the prefix sum offsets_[i + 1] is where list i starts;
    // filling advances offsets_[i + 1] to where list i ends, which is the final offsets_[i + 1].
    offsets_.assign(lists + 2, 0);
    for (const auto& p : pairs) ++offsets_[p.first + 2];
    for (std::size_t i = 2; i < lists + 2; ++i) offsets_[i] += offsets_[i - 1];
    items_.resize(pairs.size());
    for (const auto& p : pairs) items_[offsets_[p.first + 1]++] = p.second;
    offsets_.pop_back();
  }

  std::vector<std::uint32_t> offsets_;  // size() + 1 entries
  std::vector<T> items_;
};

}  // namespace objprof::ir
