#include "objprof/analysis/chain_store.h"

#include <algorithm>

namespace objprof::analysis {

ObjectId ChainStore::add(std::uint32_t context, std::uint64_t size, std::uint64_t addr, std::uint32_t epoch,
                         std::uint64_t bytes_clock, std::uint8_t flags) {
  const auto id = static_cast<ObjectId>(ctx_.push_back(context));
  if (size >= kBigSize) {
    size_.push_back(kBigSize);
    big_sizes_[id] = size;
  } else {
    size_.push_back(static_cast<std::uint32_t>(size));
  }
  birth_addr_.push_back(addr);
  birth_bytes_.push_back(bytes_clock);
  birth_epoch_.push_back(epoch);
  death_epoch_.push_back(kNoEpoch);
  last_move_.push_back(kNoIndex);
  run_first_.push_back(kNoEpoch);
  run_last_.push_back(kNoEpoch);
  prev_runs_.push_back(kNoIndex);
  flags_.push_back(flags);
  return id;
}

void ChainStore::add_move(ObjectId o, std::uint32_t epoch, std::uint64_t to) {
  last_move_[o] = static_cast<std::uint32_t>(moves_.push_back(MoveRec{to, epoch, last_move_[o]}));
}

void ChainStore::start_run(ObjectId o, std::uint32_t epoch) {
  prev_runs_[o] = static_cast<std::uint32_t>(runs_.push_back(RunRec{run_first_[o], run_last_[o], prev_runs_[o]}));
  run_first_[o] = epoch;
  run_last_[o] = epoch;
}

std::uint32_t ChainStore::first_access(ObjectId o) const noexcept {
  std::uint32_t first = run_first_[o];
  for (std::uint32_t r = prev_runs_[o]; r != kNoIndex; r = runs_[r].prev) first = runs_[r].first;
  return first;
}

std::uint32_t ChainStore::access_count(ObjectId o) const noexcept {
  if (run_last_[o] == kNoEpoch) return 0;
  std::uint32_t n = run_last_[o] - run_first_[o] + 1;
  for (std::uint32_t r = prev_runs_[o]; r != kNoIndex; r = runs_[r].prev) n += runs_[r].last - runs_[r].first + 1;
  return n;
}

std::uint32_t ChainStore::move_count(ObjectId o) const noexcept {
  std::uint32_t n = 0;
  for (std::uint32_t m = last_move_[o]; m != kNoIndex; m = moves_[m].prev) ++n;
  return n;
}

std::vector<Placement> ChainStore::placements(ObjectId o) const {
  std::vector<Placement> out;
  for (std::uint32_t m = last_move_[o]; m != kNoIndex; m = moves_[m].prev) out.push_back({moves_[m].epoch, moves_[m].addr});
  out.push_back({birth_epoch_[o], birth_addr_[o]});
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<EpochRun> ChainStore::accessed(ObjectId o) const {
  std::vector<EpochRun> out;
  if (run_last_[o] == kNoEpoch) return out;
  out.push_back({run_first_[o], run_last_[o]});
  for (std::uint32_t r = prev_runs_[o]; r != kNoIndex; r = runs_[r].prev) out.push_back({runs_[r].first, runs_[r].last});
  std::reverse(out.begin(), out.end());
  return out;
}

std::uint64_t ChainStore::addr_in_epoch(ObjectId o, std::uint32_t epoch) const {
  if (epoch < birth_epoch_[o]) return 0;
  // A move recorded at epoch m happened in GC m: the new address holds from epoch m + 1.
  for (std::uint32_t m = last_move_[o]; m != kNoIndex; m = moves_[m].prev)
    if (moves_[m].epoch < epoch) return moves_[m].addr;
  return birth_addr_[o];
}

Chain ChainStore::chain(ObjectId o) const {
  Chain c;
  c.id = o;
  c.context = ctx_[o];
  c.size = size_of(o);
  c.birth_epoch = birth_epoch_[o];
  c.birth_bytes = birth_bytes_[o];
  c.placements = placements(o);
  c.death_epoch = death_epoch_[o];
  c.flags = flags_[o];
  c.accessed = accessed(o);
  return c;
}

std::uint64_t ChainStore::memory_bytes() const noexcept {
  return ctx_.memory_bytes() + size_.memory_bytes() + birth_epoch_.memory_bytes() + death_epoch_.memory_bytes() +
         last_move_.memory_bytes() + run_first_.memory_bytes() + run_last_.memory_bytes() +
         prev_runs_.memory_bytes() + birth_addr_.memory_bytes() + birth_bytes_.memory_bytes() +
         flags_.memory_bytes() + moves_.memory_bytes() + runs_.memory_bytes() +
         big_sizes_.size() * (sizeof(ObjectId) + sizeof(std::uint64_t) + 2 * sizeof(void*));
}

}  // namespace objprof::analysis
