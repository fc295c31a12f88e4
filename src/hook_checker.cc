#include "hook_checker.h"

#include <fmt/core.h>

#include <algorithm>

namespace objprof::internal {

namespace {

constexpr std::size_t npos = ~std::size_t{0};

bool overlaps(Address a, std::uint64_t an, Address b, std::uint64_t bn) { return a < b + bn && b < a + an; }

// What happens to a live object during one GC.
enum class Fate : std::uint8_t { kStays, kFreed, kMoved };

}  // namespace

void HookChecker::report(std::string_view hook, Address addr, std::string what) {
  std::lock_guard<std::mutex> lock(report_mutex_);
  report_(hook, addr, std::move(what));
}

bool HookChecker::in_spaces(Address addr, std::uint64_t size) const noexcept {
  return std::any_of(spaces_.begin(), spaces_.end(), [&](const HeapSpace& s) { return s.contains(addr, size); });
}

std::size_t HookChecker::find(Address addr) const noexcept {
  auto it = std::lower_bound(live_.begin(), live_.end(), addr, [](const Object& o, Address a) { return o.addr < a; });
  return it != live_.end() && it->addr == addr ? static_cast<std::size_t>(it - live_.begin()) : npos;
}

bool HookChecker::check_owner(const ThreadState& thread, Local& local, std::string_view hook) {
  const std::uint64_t generation = detach_generation_.load(std::memory_order_acquire);
  if (local.last_owned == &thread && local.last_owned_generation == generation) return true;
  const std::thread::id self = std::this_thread::get_id();
  std::thread::id owner;
  {
    std::lock_guard<std::mutex> lock(owners_mutex_);
    owner = owners_.try_emplace(&thread, self).first->second;
  }
  if (owner != self) {
    report(hook, 0,
           fmt::format("ThreadState of thread {} ('{}') used by an OS thread that does not own it (a ThreadState "
                       "belongs to the first OS thread that allocates with it or detaches it)",
                       thread.id(), thread.name()));
    return false;
  }
  local.last_owned = &thread;
  local.last_owned_generation = generation;
  return true;
}

bool HookChecker::alloc(const ThreadState& thread, Address addr, std::uint64_t size) {
  Local& local = locals_.local();
  check_owner(thread, local, "on_alloc");
  if (size == 0) {
    report("on_alloc", addr, "object of size 0 (every object covers at least one granule)");
    return false;
  }
  local.allocs.push_back({addr, size});
  return true;
}

bool HookChecker::resize(const ThreadState& thread, Address addr) {
  Local& local = locals_.local();
  check_owner(thread, local, "on_resize");
  local.resizes.push_back(addr);
  return true;
}

void HookChecker::check_resizes() {
  for (Local& local : locals_) {
    for (Address a : local.resizes)
      if (find(a) == npos)
        report("on_resize", a,
               "no live object starts at this address (never allocated, or already freed): on_resize takes the "
               "address on_alloc was given");
    local.resizes.clear();
  }
}

void HookChecker::detach(const ThreadState& thread) {
  Local& local = locals_.local();
  check_owner(thread, local, "detach_thread");
  std::lock_guard<std::mutex> lock(owners_mutex_);
  owners_.erase(&thread);
  detach_generation_.fetch_add(1, std::memory_order_acq_rel);
}

void HookChecker::move(Address from, Address to) { locals_.local().moves.push_back({from, to}); }

void HookChecker::move_range(Address from, Address to, std::uint64_t bytes) {
  locals_.local().ranges.push_back({from, to, bytes});
}

void HookChecker::free(Address addr) { locals_.local().frees.push_back(addr); }

void HookChecker::free_range(Address addr, std::uint64_t bytes) { locals_.local().free_ranges.push_back({addr, bytes}); }

void HookChecker::gc_begin() {
  // The epoch's allocations (mutators are stopped), in address order.
  std::vector<Object> fresh;
  for (Local& local : locals_) {
    fresh.insert(fresh.end(), local.allocs.begin(), local.allocs.end());
    local.allocs.clear();
  }
  if (fresh.empty()) {
    check_resizes();
    return;
  }
  std::sort(fresh.begin(), fresh.end(), [](const Object& a, const Object& b) { return a.addr < b.addr; });
  std::vector<Object> merged;
  merged.reserve(live_.size() + fresh.size());
  std::size_t i = 0;
  auto reject_overlap = [&](const Object& o) {
    // The newest object wins: whatever the runtime forgot to free is gone.
    while (!merged.empty() && overlaps(merged.back().addr, merged.back().size, o.addr, o.size)) {
      report("on_alloc", o.addr,
             fmt::format("object [{:#x}, +{}) overlaps the live object [{:#x}, +{}), which was never freed: memory "
                         "may be reused only after its object was reported with on_free (inside gc_begin/gc_end)",
                         o.addr, o.size, merged.back().addr, merged.back().size));
      merged.pop_back();
    }
  };
  for (const Object& o : fresh) {
    while (i < live_.size() && live_[i].addr < o.addr) {
      // A live object before o; o's predecessors in `fresh` are already in `merged`.
      merged.push_back(live_[i++]);
    }
    // Live objects that start inside o overlap it as well.
    reject_overlap(o);
    while (i < live_.size() && live_[i].addr < o.addr + o.size) {
      report("on_alloc", o.addr,
             fmt::format("object [{:#x}, +{}) overlaps the live object [{:#x}, +{}), which was never freed: memory "
                         "may be reused only after its object was reported with on_free (inside gc_begin/gc_end)",
                         o.addr, o.size, live_[i].addr, live_[i].size));
      ++i;
    }
    merged.push_back(o);
  }
  merged.insert(merged.end(), live_.begin() + static_cast<std::ptrdiff_t>(i), live_.end());
  live_ = std::move(merged);
  check_resizes();  // the epoch's resizes may concern its new objects
}

void HookChecker::gc_end() {
  std::vector<MoveLog> moves;
  std::vector<RangeMoveLog> ranges;
  std::vector<Address> frees;
  std::vector<FreeRangeLog> free_ranges;
  for (auto& local : locals_) gather_collector_log(local, moves, ranges, frees, free_ranges);
  if (moves.empty() && ranges.empty() && frees.empty() && free_ranges.empty()) return;
  std::vector<Fate> fate(live_.size(), Fate::kStays);
  std::vector<Address> dest(live_.size(), 0);
  // Claims live object i for one event; false (reported) if an earlier event of this GC did.
  auto claim = [&](std::size_t i, Fate f, Address to, std::string_view hook, Address addr) {
    if (fate[i] != Fate::kStays) {
      report(hook, addr,
             fmt::format("object {:#x} was already {} in this GC (each object moves or dies at most once per GC)",
                         live_[i].addr, fate[i] == Fate::kFreed ? "freed" : "moved"));
      return false;
    }
    fate[i] = f;
    dest[i] = to;
    return true;
  };
  for (Address a : frees) {
    const std::size_t i = find(a);
    if (i == npos) {
      report("on_free", a,
             "no live object starts at this address (never allocated, already freed, allocated during this GC, or "
             "not the object's first byte)");
      continue;
    }
    claim(i, Fate::kFreed, 0, "on_free", a);
  }
  // Calls fn(index) for every live object inside [from, from + bytes) but those skip(index)
  // names; one that the range cuts in two is reported against `hook` instead.
  auto each_inside = [&](std::string_view hook, Address from, std::uint64_t bytes, auto&& fn, auto&& skip) {
    auto first = std::lower_bound(live_.begin(), live_.end(), from,
                                  [](const Object& o, Address a) { return o.addr + o.size <= a; });
    for (auto it = first; it != live_.end() && it->addr < from + bytes; ++it) {
      if (skip(static_cast<std::size_t>(it - live_.begin()))) continue;
      if (it->addr < from || it->addr + it->size > from + bytes) {
        report(hook, from,
               fmt::format("range [{:#x}, +{}) cuts the live object [{:#x}, +{}) in two", from, bytes, it->addr, it->size));
        continue;
      }
      fn(static_cast<std::size_t>(it - live_.begin()));
    }
  };
  for (const MoveLog& m : moves) {
    const std::size_t i = find(m.from);
    if (i == npos) {
      report("on_move", m.from,
             fmt::format("no live object starts at this address (moved to {:#x}); addresses are pre-GC addresses",
                         m.to));
      continue;
    }
    if (!in_spaces(m.to, live_[i].size)) {
      report("on_move", m.from,
             fmt::format("destination [{:#x}, +{}) does not lie inside one registered space", m.to, live_[i].size));
      continue;
    }
    claim(i, Fate::kMoved, m.to, "on_move", m.from);
  }
  for (const RangeMoveLog& r : ranges) {
    each_inside("on_move_range", r.from, r.bytes, [&](std::size_t i) {
      const Object& o = live_[i];
      const Address to = r.to + (o.addr - r.from);
      if (!in_spaces(to, o.size)) {
        report("on_move_range", r.from,
               fmt::format("moves the object {:#x} to [{:#x}, +{}), outside every registered space", o.addr, to, o.size));
        return;
      }
      claim(i, Fate::kMoved, to, "on_move_range", r.from);
    }, [](std::size_t) { return false; });
  }
  // A free range frees what this GC does not move (a copying collector reports its evacuated
  // area as one range, whenever in the GC it likes): the moved inside it, or cut by it, are spared.
  for (const FreeRangeLog& r : free_ranges)
    each_inside("on_free_range", r.from, r.bytes, [&](std::size_t i) { claim(i, Fate::kFreed, 0, "on_free_range", r.from); },
                [&](std::size_t i) { return fate[i] == Fate::kMoved; });
  // The heap after the GC: survivors in place (still sorted), moved objects at their targets.
  struct Placed {
    Object obj;
    Address from;  // pre-GC address if moved, else 0
  };
  std::vector<Placed> stay, moved;
  for (std::size_t i = 0; i < live_.size(); ++i) {
    if (fate[i] == Fate::kStays) stay.push_back({live_[i], 0});
    if (fate[i] == Fate::kMoved) moved.push_back({{dest[i], live_[i].size}, live_[i].addr});
  }
  std::sort(moved.begin(), moved.end(), [](const Placed& a, const Placed& b) { return a.obj.addr < b.obj.addr; });
  std::vector<Placed> after(stay.size() + moved.size());
  std::merge(stay.begin(), stay.end(), moved.begin(), moved.end(), after.begin(),
             [](const Placed& a, const Placed& b) { return a.obj.addr < b.obj.addr; });
  live_.clear();
  for (const Placed& p : after) {
    if (!live_.empty() && overlaps(live_.back().addr, live_.back().size, p.obj.addr, p.obj.size)) {
      // Blame the move (two survivors cannot overlap: their allocations were checked).
      report("on_move", p.from ? p.from : p.obj.addr,
             fmt::format("after this GC the object at [{:#x}, +{}) overlaps the live object [{:#x}, +{}): an object "
                         "was moved onto memory that is still in use",
                         p.obj.addr, p.obj.size, live_.back().addr, live_.back().size));
      continue;
    }
    live_.push_back(p.obj);
  }
}

}  // namespace objprof::internal
