#include "objprof/analysis/chain_store.h"

#include <algorithm>

namespace objprof::analysis {

void ChainStore::grow() {
  blocks_[nblocks_++] = std::make_unique_for_overwrite<Block>();
}

ObjectId ChainStore::reserve(std::uint64_t size) {
  if ((size_ & (kBlock - 1)) == 0) [[unlikely]]
    grow();
  const auto id = static_cast<ObjectId>(size_++);
  if (size >= kBigSize) [[unlikely]]
    big_sizes_[id] = size;
  return id;
}

void ChainStore::add_move(ObjectId o, std::uint32_t epoch, std::uint64_t to) {
  std::uint32_t& last = B(o).last_move[I(o)];
  last = static_cast<std::uint32_t>(moves_.push_back(MoveRec{to, epoch, last}));
}

void ChainStore::start_run(ObjectId o, std::uint32_t epoch) {
  Block& b = B(o);
  const std::size_t i = I(o);
  b.prev_runs[i] = static_cast<std::uint32_t>(runs_.push_back(RunRec{b.run_first[i], b.run_last[i], b.prev_runs[i]}));
  b.run_first[i] = epoch;
  b.run_last[i] = epoch;
}

std::uint32_t ChainStore::first_access(ObjectId o) const noexcept {
  std::uint32_t first = B(o).run_first[I(o)];
  for (std::uint32_t r = B(o).prev_runs[I(o)]; r != kNoIndex; r = runs_[r].prev) first = runs_[r].first;
  return first;
}

std::uint32_t ChainStore::access_count(ObjectId o) const noexcept {
  const Block& b = B(o);
  const std::size_t i = I(o);
  if (b.run_last[i] == kNoEpoch) return 0;
  std::uint32_t n = b.run_last[i] - b.run_first[i] + 1;
  for (std::uint32_t r = b.prev_runs[i]; r != kNoIndex; r = runs_[r].prev) n += runs_[r].last - runs_[r].first + 1;
  return n;
}

std::uint32_t ChainStore::move_count(ObjectId o) const noexcept {
  std::uint32_t n = 0;
  for (std::uint32_t m = B(o).last_move[I(o)]; m != kNoIndex; m = moves_[m].prev) ++n;
  return n;
}

std::vector<Placement> ChainStore::placements(ObjectId o) const {
  std::vector<Placement> out;
  for (std::uint32_t m = B(o).last_move[I(o)]; m != kNoIndex; m = moves_[m].prev) out.push_back({moves_[m].epoch, moves_[m].addr});
  out.push_back({B(o).birth_epoch[I(o)], B(o).birth_addr[I(o)]});
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<EpochRun> ChainStore::accessed(ObjectId o) const {
  std::vector<EpochRun> out;
  const Block& b = B(o);
  const std::size_t i = I(o);
  if (b.run_last[i] == kNoEpoch) return out;
  out.push_back({b.run_first[i], b.run_last[i]});
  for (std::uint32_t r = b.prev_runs[i]; r != kNoIndex; r = runs_[r].prev) out.push_back({runs_[r].first, runs_[r].last});
  std::reverse(out.begin(), out.end());
  return out;
}

std::uint64_t ChainStore::addr_in_epoch(ObjectId o, std::uint32_t epoch) const {
  if (epoch < B(o).birth_epoch[I(o)]) return 0;
  // A move recorded at epoch m happened in GC m: the new address holds from epoch m + 1.
  for (std::uint32_t m = B(o).last_move[I(o)]; m != kNoIndex; m = moves_[m].prev)
    if (moves_[m].epoch < epoch) return moves_[m].addr;
  return B(o).birth_addr[I(o)];
}

Chain ChainStore::chain(ObjectId o) const {
  Chain c;
  c.id = o;
  c.context = context(o);
  c.size = size_of(o);
  c.birth_epoch = birth_epoch(o);
  c.birth_bytes = birth_bytes(o);
  c.placements = placements(o);
  c.death_epoch = death_epoch(o);
  c.flags = flags(o);
  c.accessed = accessed(o);
  return c;
}

std::uint64_t ChainStore::memory_bytes() const noexcept {
  return nblocks_ * sizeof(Block) + kMaxBlocks * sizeof(void*) + moves_.memory_bytes() + runs_.memory_bytes() +
         big_sizes_.size() * (sizeof(ObjectId) + sizeof(std::uint64_t) + 2 * sizeof(void*));
}

}  // namespace objprof::analysis
