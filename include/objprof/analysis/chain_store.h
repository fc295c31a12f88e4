// ChainStore: the Address-Chain of every object in a trace, kept compact.
//
// The paper's chain of an object o is
//     < (AllocSite, T_death), (T_0, Addr_0), (T_1, Addr_1), ... >   plus type, size, T_access...
// where T is the GC epoch. objprof also keeps the thesis' clock (bytes allocated before the
// object's birth) and the thread that allocated it.
//
// Layout (why it looks like this): a long trace has tens of millions of objects, most of
// which never move and are accessed in a few consecutive epochs. So the common case is stored
// inline in structure-of-arrays blocks (49 bytes per object), and the rare, variable-length
// parts live in side arrays linked backwards from the object:
//   - moves: one 16-byte record per (epoch, new address), newest first;
//   - accessed epochs: the current run [run_first, run_last] inline; earlier runs (only when
//     the object had a gap between accesses) as 12-byte records, newest first.
// Sizes of 4 GiB and more go to a side table (no real object is that large, but a trace may
// say so and must not be misread).
//
// Thread safety: add() / reserve() from one thread (the analyzer's front); init() and the
// updates of existing objects from others (the back's shards), handed over in order through
// a queue: blocks never move (a fixed table of block pointers), so appending never disturbs
// the readers of earlier objects. init() and the inline updates (set_dead, add_flags,
// try_extend_access) of distinct objects may run concurrently; those that append to a side
// array (add_move, start_run, set_footprint) may not. Sizes of 4 GiB and more are the back's
// to remember (size_field() says kBigSize); size_of() is for after the analysis.
#pragma once

#include "objprof/analysis/segmented_vector.h"
#include "objprof/config.h"

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

namespace objprof::analysis {

using ObjectId = std::uint32_t;
// "No epoch": an object still alive, never accessed, never moved.
inline constexpr std::uint32_t kNoEpoch = 0xFFFF'FFFFu;
inline constexpr std::uint32_t kNoIndex = 0xFFFF'FFFFu;

// (T_i, Addr_i): where an object was from GC epoch `epoch` on. The first placement is the
// allocation (epoch = birth epoch); each later one is a move made by the GC of that epoch.
struct Placement {
  std::uint32_t epoch = 0;
  std::uint64_t addr = 0;
  friend bool operator==(const Placement&, const Placement&) = default;
};

// Epochs first..last (inclusive), in each of which the object was accessed.
struct EpochRun {
  std::uint32_t first = 0, last = 0;
  friend bool operator==(const EpochRun&, const EpochRun&) = default;
};

// Object flags.
enum ObjectFlag : std::uint8_t {
  // No free record: the object's address was taken by another object, so it must have died
  // at or before the GC that preceded the reuse (a runtime that reports deaths implicitly).
  kDeathInferred = 1,
  // Allocated while a (concurrent) collection was running; that collection did not touch it.
  kBornDuringGc = 2,
  // The profiler's online tracker reported it as a possible leak (a `stale` record).
  kReportedStale = 4,
};

// One object's chain, materialised for reports and tests.
struct Chain {
  ObjectId id = 0;
  std::uint32_t context = 0;  // index into TraceAnalysis::contexts (site, type, thread)
  std::uint64_t size = 0;
  std::uint32_t birth_epoch = 0;
  std::uint64_t birth_bytes = 0;
  std::vector<Placement> placements;  // birth first, then one per move, oldest first
  std::uint32_t death_epoch = kNoEpoch;  // the GC that freed it; kNoEpoch: alive at the end
  std::uint8_t flags = 0;
  std::vector<EpochRun> accessed;  // increasing, disjoint, non-adjacent
  bool alive() const noexcept { return death_epoch == kNoEpoch; }
};

class ChainStore {
 public:
  std::size_t size() const noexcept { return size_; }

  // Appends a newborn object; returns its id (ids are dense, in file order).
  ObjectId add(std::uint32_t context, std::uint64_t size, std::uint64_t addr, std::uint32_t epoch,
               std::uint64_t bytes_clock, std::uint8_t flags) {
    const ObjectId id = reserve(size);
    init(id, context, size, addr, epoch, bytes_clock, flags);
    return id;
  }
  // add() in two steps, so that the appending thread need not write (and first-touch) the
  // fields itself: reserve() on the appending thread (the next id; its block exists after),
  // then init() once, on any thread, before anything else reads or updates the object.
  ObjectId reserve(std::uint64_t size);
  void init(ObjectId id, std::uint32_t context, std::uint64_t size, std::uint64_t addr, std::uint32_t epoch,
            std::uint64_t bytes_clock, std::uint8_t flags) noexcept {
    Block& b = B(id);
    const std::size_t i = I(id);
    b.ctx[i] = context;
    b.size[i] = size >= kBigSize ? kBigSize : static_cast<std::uint32_t>(size);
    b.birth_addr[i] = addr;
    b.birth_bytes[i] = bytes_clock;
    b.birth_epoch[i] = epoch;
    b.death_epoch[i] = kNoEpoch;
    b.last_move[i] = kNoIndex;
    b.run_first[i] = kNoEpoch;
    b.run_last[i] = kNoEpoch;
    b.prev_runs[i] = kNoIndex;
    b.flags[i] = flags;
  }

  // --- inline fields ---
  std::uint32_t context(ObjectId o) const noexcept { return B(o).ctx[I(o)]; }
  std::uint64_t size_of(ObjectId o) const noexcept {
    const std::uint32_t s = B(o).size[I(o)];
    return s != kBigSize ? s : big_sizes_.at(o);
  }
  static constexpr std::uint32_t kBigSize = 0xFFFF'FFFFu;
  // What the object holds in all (a resize record: header plus out-of-line parts); its size
  // when the trace never resized it. Rankings and byte totals use it; address ranges use size_of.
  std::uint64_t footprint_of(ObjectId o) const noexcept {
    if (footprints_.empty()) return size_of(o);
    const auto it = footprints_.find(o);
    return it == footprints_.end() ? size_of(o) : it->second;
  }
  std::uint32_t size_field(ObjectId o) const noexcept { return B(o).size[I(o)]; }
  std::uint64_t birth_addr(ObjectId o) const noexcept { return B(o).birth_addr[I(o)]; }
  std::uint64_t birth_bytes(ObjectId o) const noexcept { return B(o).birth_bytes[I(o)]; }
  std::uint32_t birth_epoch(ObjectId o) const noexcept { return B(o).birth_epoch[I(o)]; }
  std::uint32_t death_epoch(ObjectId o) const noexcept { return B(o).death_epoch[I(o)]; }
  bool alive(ObjectId o) const noexcept { return B(o).death_epoch[I(o)] == kNoEpoch; }
  std::uint8_t flags(ObjectId o) const noexcept { return B(o).flags[I(o)]; }
  // Last epoch with an access, kNoEpoch if never accessed.
  std::uint32_t last_access(ObjectId o) const noexcept { return B(o).run_last[I(o)]; }
  std::uint32_t first_access(ObjectId o) const noexcept;
  // Number of epochs in which the object was accessed.
  std::uint32_t access_count(ObjectId o) const noexcept;
  std::uint32_t move_count(ObjectId o) const noexcept;
  bool moved(ObjectId o) const noexcept { return B(o).last_move[I(o)] != kNoIndex; }
  // Address at the end of the trace (or at death).
  std::uint64_t last_addr(ObjectId o) const noexcept {
    const std::uint32_t m = B(o).last_move[I(o)];
    return m == kNoIndex ? B(o).birth_addr[I(o)] : moves_[m].addr;
  }

  // --- updates (analyzer) ---
  void set_dead(ObjectId o, std::uint32_t epoch) noexcept { B(o).death_epoch[I(o)] = epoch; }
  void set_footprint(ObjectId o, std::uint64_t bytes) { footprints_[o] = bytes; }
  void add_flags(ObjectId o, std::uint8_t f) noexcept {
    std::uint8_t& x = B(o).flags[I(o)];
    x = static_cast<std::uint8_t>(x | f);
  }
  void add_move(ObjectId o, std::uint32_t epoch, std::uint64_t to);
  // Records an access in `epoch`. Returns false when the epoch starts a new run after a gap:
  // the caller must then call start_run (which appends to a side array, so it is not safe
  // to run concurrently). Epochs of one object must arrive in increasing order; an epoch at
  // or before the last one is ignored.
  bool try_extend_access(ObjectId o, std::uint32_t epoch) noexcept {
    Block& b = B(o);
    std::uint32_t& last = b.run_last[I(o)];
    if (last == kNoEpoch) {
      b.run_first[I(o)] = epoch;
      last = epoch;
      return true;
    }
    if (epoch <= last) return true;
    if (epoch == last + 1) {
      last = epoch;
      return true;
    }
    return false;
  }
  void start_run(ObjectId o, std::uint32_t epoch);
  void mark_accessed(ObjectId o, std::uint32_t epoch) {
    if (!try_extend_access(o, epoch)) start_run(o, epoch);
  }

  // Start loading what a death or move (prefetch_update) or an access (prefetch_access) of
  // object o will touch: the analyzer's batched loops call them a few objects ahead.
  void prefetch_update(ObjectId o) const noexcept {
    __builtin_prefetch(&B(o).size[I(o)]);
    __builtin_prefetch(&B(o).death_epoch[I(o)]);
  }
  void prefetch_access(ObjectId o) const noexcept {
    __builtin_prefetch(&B(o).run_first[I(o)]);
    __builtin_prefetch(&B(o).run_last[I(o)]);
  }

  // --- whole chains ---
  Chain chain(ObjectId o) const;
  std::vector<Placement> placements(ObjectId o) const;
  std::vector<EpochRun> accessed(ObjectId o) const;
  // Where the object was during epoch `epoch` (before that epoch's GC moved it); 0 if it was
  // not yet born.
  std::uint64_t addr_in_epoch(ObjectId o, std::uint32_t epoch) const;

  // Bytes held by the store (every block and side table).
  std::uint64_t memory_bytes() const noexcept;
  std::uint64_t moves() const noexcept { return moves_.size(); }
  std::uint64_t extra_runs() const noexcept { return runs_.size(); }

 private:
  struct MoveRec {
    std::uint64_t addr;
    std::uint32_t epoch;
    std::uint32_t prev;
  };
  struct RunRec {
    std::uint32_t first, last, prev;
  };

  // 2^16 objects per block, each field an array (structure of arrays): appending one object
  // is one bounds check, and a pass over one field streams through memory.
  static constexpr std::size_t kLog2Block = 16;
  static constexpr std::size_t kBlock = std::size_t{1} << kLog2Block;
  struct Block {
    std::uint32_t ctx[kBlock], size[kBlock], birth_epoch[kBlock], death_epoch[kBlock], last_move[kBlock],
        run_first[kBlock], run_last[kBlock], prev_runs[kBlock];
    std::uint64_t birth_addr[kBlock], birth_bytes[kBlock];
    std::uint8_t flags[kBlock];
  };
  static constexpr std::size_t kMaxBlocks = (std::size_t{kNoIndex} + kBlock - 1) >> kLog2Block;
  Block& B(ObjectId o) const noexcept { return *blocks_[o >> kLog2Block]; }
  static std::size_t I(ObjectId o) noexcept { return o & (kBlock - 1); }
  __attribute__((noinline)) void grow();

  // Three cache lines, by who writes them while an analysis runs on several threads: the
  // block table is only read (by every thread, at every object access); the count is the
  // appending thread's (written at every allocation); the side arrays are the back's. Sharing a
  // line, each allocation took the table's line away from the threads reading objects.
  alignas(kCacheLine) std::unique_ptr<std::unique_ptr<Block>[]> blocks_ = std::make_unique<std::unique_ptr<Block>[]>(kMaxBlocks);
  alignas(kCacheLine) std::size_t nblocks_ = 0;
  std::size_t size_ = 0;
  alignas(kCacheLine) SegmentedVector<MoveRec> moves_;
  SegmentedVector<RunRec> runs_;
  std::unordered_map<ObjectId, std::uint64_t> big_sizes_;
  std::unordered_map<ObjectId, std::uint64_t> footprints_;  // resized objects only
};

}  // namespace objprof::analysis
