// The analyzer's AddressMap (private) against a std::map: puts, finds, single erases and bulk
// erase_if over dense and scattered heaps, for a whole-heap map and for shards' maps (one
// 64 KiB window of every group, event_batch.h); and the shard layout's two promises: every
// shard gets the same share of a contiguous heap, and a shard's map keeps its probe runs as
// short as the whole heap's.
#include "../../src/analysis/address_map.h"
#include "../../src/analysis/event_batch.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <vector>

namespace test_address_map {

using objprof::analysis::internal::AddressMap;
using objprof::analysis::internal::kShardWindowBits;
using objprof::analysis::internal::shard_count;
using objprof::analysis::internal::shard_group_log2;
using objprof::analysis::internal::shard_of;

namespace {

// The addresses a heap of `n` objects of `size` bytes from `base` takes that fall in shard
// `shard` of `shards` (every address when shards == 1).
std::vector<std::uint64_t> heap(std::uint64_t base, std::uint64_t n, std::uint64_t size, unsigned shard, unsigned shards) {
  std::vector<std::uint64_t> out;
  for (std::uint64_t k = 0; k < n; ++k)
    if (const std::uint64_t a = base + size * k; shards == 1 || shard_of(a, shards) == shard) out.push_back(a);
  return out;
}

void require_same(const AddressMap& m, const std::map<std::uint64_t, std::uint32_t>& ref, const std::vector<std::uint64_t>& probes) {
  REQUIRE(m.size() == ref.size());
  for (std::uint64_t a : probes) {
    const auto it = ref.find(a);
    REQUIRE(m.find(a) == (it == ref.end() ? AddressMap::kMissing : it->second));
  }
}

}  // namespace

TEST_CASE("address map: puts, erases and erase_if agree with a std::map", "[analysis][address-map][single-threaded]") {
  for (unsigned shards : {1u, 2u, 8u}) {
    for (std::uint64_t size : {8u, 32u, 48u}) {
      INFO(shards << " shards, " << size << "-byte objects");
      const unsigned shard = shards - 1;
      std::mt19937_64 rng(shards * 100 + size);
      AddressMap m(shard_group_log2(shards));
      std::map<std::uint64_t, std::uint32_t> ref;
      // A bump-allocated space not aligned to a window, and a scattered one.
      std::vector<std::uint64_t> keys = heap(0x7f00'0001'2340, 40'000, size, shard, shards);
      for (int i = 0; i < 5'000; ++i)
        if (const std::uint64_t a = 0x5000'0000'0000 + 16 * (rng() % (1u << 26)); shards == 1 || shard_of(a, shards) == shard)
          keys.push_back(a);
      std::uint32_t id = 0;
      for (std::uint64_t a : keys) {
        const auto it = ref.find(a);
        REQUIRE(m.put(a, id) == (it == ref.end() ? AddressMap::kMissing : it->second));
        ref[a] = id++;
      }
      std::vector<std::uint64_t> probes = keys;
      for (std::uint64_t a : keys) probes.push_back(a + 8);  // mostly missing
      require_same(m, ref, probes);

      // Single erases, present and missing.
      for (int i = 0; i < 3'000; ++i) {
        const std::uint64_t a = probes[rng() % probes.size()];
        const auto it = ref.find(a);
        REQUIRE(m.erase(a) == (it == ref.end() ? AddressMap::kMissing : it->second));
        if (it != ref.end()) ref.erase(it);
      }
      require_same(m, ref, probes);

      // A bulk erase of a middle part of the bump space (a copying GC's freed range), then of
      // every other scattered object: each removed entry is reported once, the rest stay.
      const std::uint64_t from = 0x7f00'0001'2340 + size * 5'000, to = from + size * 30'000;
      for (const auto& doomed : {std::function<bool(std::uint64_t)>([&](std::uint64_t a) { return a >= from && a < to; }),
                                 std::function<bool(std::uint64_t)>([](std::uint64_t a) { return a >= 0x5000'0000'0000 && (a >> 4) % 2 == 0; })}) {
        std::map<std::uint64_t, std::uint32_t> removed;
        m.erase_if(doomed, [&](std::uint64_t a, std::uint32_t v) { REQUIRE(removed.emplace(a, v).second); });
        std::map<std::uint64_t, std::uint32_t> expected;
        for (auto it = ref.begin(); it != ref.end();)
          if (doomed(it->first)) {
            expected.insert(*it);
            it = ref.erase(it);
          } else {
            ++it;
          }
        REQUIRE(removed == expected);
        require_same(m, ref, probes);
      }

      // The map still takes new entries where the removed ones were.
      for (std::uint64_t a = from; a < to; a += 4 * size)
        if (shards == 1 || shard_of(a, shards) == shard) {
          REQUIRE(m.put(a, id) == AddressMap::kMissing);
          ref[a] = id++;
        }
      require_same(m, ref, probes);
    }
  }
}

TEST_CASE("address map: every shard owns the same share of a contiguous heap", "[analysis][address-map][single-threaded]") {
  for (unsigned wanted : {1u, 3u, 8u, 12u, 100u, 1000u}) {
    const unsigned shards = shard_count(wanted);
    INFO(wanted << " shards wanted, " << shards << " made");
    REQUIRE((shards & (shards - 1)) == 0);
    REQUIRE(shards >= std::min(wanted, 128u));
    REQUIRE(shards <= 128u);
    // 64 whole groups of windows from an unaligned start: every shard owns exactly 64 windows.
    const std::uint64_t window = std::uint64_t{1} << kShardWindowBits;
    const std::uint64_t base = 0x1234 * window * shards;
    std::vector<unsigned> owned(shards);
    for (std::uint64_t w = 0; w < 64u * shards; ++w) {
      const unsigned s = shard_of(base + w * window + 24, shards);
      REQUIRE(s < shards);
      REQUIRE(shard_of(base + w * window + window - 8, shards) == s);  // a window is one shard's
      ++owned[s];
    }
    for (unsigned s = 0; s < shards; ++s) REQUIRE(owned[s] == 64u);
  }
}

// The reason for the layout: with windows shared out at random, a shard's map of a copying
// GC's space had probe runs of thousands of slots (a mean walk of 920 slots to miss, with 8
// shards and 32-byte objects).
TEST_CASE("address map: a shard's probe runs stay as short as the whole heap's", "[analysis][address-map][single-threaded]") {
  for (unsigned shards : {1u, 8u, 32u}) {
    for (std::uint64_t size : {32u, 48u}) {
      INFO(shards << " shards, " << size << "-byte objects");
      double worst_mean_miss = 0;
      for (unsigned shard = 0; shard < shards; ++shard) {
        const std::vector<std::uint64_t> keys = heap(0x7fbe'7c01'2340, 32u * 4096 * shards / 8, size, shard, shards);
        AddressMap m(shard_group_log2(shards));
        for (std::uint64_t a : keys) m.put(a, 1);
        // Looking up an address that is not there walks to the end of its run.
        double walked = 0;
        std::size_t probes = 0;
        for (std::size_t i = 0; i < keys.size(); i += 7, ++probes) walked += static_cast<double>(m.probe_length(keys[i] + 8));
        worst_mean_miss = std::max(worst_mean_miss, walked / static_cast<double>(probes));
      }
      CHECK(worst_mean_miss < 4.0);
    }
  }
}

}  // namespace test_address_map
