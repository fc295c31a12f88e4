// The heaps and access sequences of the barrier benchmarks (bench_barrier, bench_emitted_barrier),
// built once per size and pattern outside any timing, so the C++ and emitted barriers run over
// exactly the same objects and the same order.
//
// A heap is an mmap'd region of 32-byte objects (an 8-byte header, then the loaded 8-byte field
// holding the object's index) with an AccessBitmap over it. A sequence is a list of object
// indices (compressed-reference style: obj = heap + idx * 32).
//
// Patterns:
//   one        one object, repeated (a cache hit on every access after the first)
//   seq        a sweep over all objects
//   seq_fresh  the same sweep (the benchmark starts a new epoch before every pass)
//   rand       uniformly random objects, as many accesses as objects
//   hit<P>     65536 random accesses where P% repeat the previous object (cache hit rate P)
#pragma once

#include "objprof/access_bitmap.h"
#include "objprof/heap_space.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace objprof::bench {

inline constexpr unsigned kObjShift = 5;  // 32-byte objects
inline constexpr std::size_t kObjBytes = std::size_t{1} << kObjShift;
inline constexpr std::size_t kFieldOffset = 8;  // the loaded field (after an 8-byte header)

struct BenchHeap {
  std::uint8_t* base = nullptr;
  std::size_t bytes = 0;
  std::unique_ptr<AccessBitmap> bitmap;
};

// The heap of `bytes` bytes, created on first use and kept for the whole run.
inline BenchHeap& heap_of(std::size_t bytes) {
  static std::map<std::size_t, BenchHeap> heaps;
  BenchHeap& h = heaps[bytes];
  if (!h.base) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      std::perror("mmap heap");
      std::abort();
    }
    h.base = static_cast<std::uint8_t*>(p);
    h.bytes = bytes;
    for (std::size_t o = 0; o < bytes; o += kObjBytes) {
      const std::uint64_t header = 0xC0FFEE, field = o / kObjBytes;
      std::memcpy(h.base + o, &header, 8);
      std::memcpy(h.base + o + kFieldOffset, &field, 8);
    }
    const Address b = reinterpret_cast<Address>(h.base);
    auto space = HeapSpace::make(b, b + bytes, 8, "bench");
    if (!space.ok()) std::abort();
    auto bm = AccessBitmap::create(*space);
    if (!bm.ok()) std::abort();
    h.bitmap = std::move(*bm);
  }
  return h;
}

struct Sequence {
  std::vector<std::uint32_t> idx;
  double hit_rate = 0;  // fraction of accesses equal to the previous one
};

// `one_length`: how many accesses the "one" pattern makes (a loop called per pass wants enough
// to amortise the call).
inline Sequence make_sequence(const std::string& pattern, std::size_t objects, int hit_percent,
                              std::size_t one_length) {
  Sequence s;
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<std::uint32_t> pick(0, static_cast<std::uint32_t>(objects - 1));
  if (pattern == "one") {
    s.idx.assign(one_length, static_cast<std::uint32_t>(objects / 2));
  } else if (pattern == "seq" || pattern == "seq_fresh") {
    s.idx.resize(objects);
    std::iota(s.idx.begin(), s.idx.end(), 0u);
  } else if (pattern == "rand") {
    s.idx.resize(objects);
    for (auto& i : s.idx) i = pick(rng);
  } else {  // hit rate
    std::uniform_int_distribution<int> pct(0, 99);
    s.idx.resize(65536);
    std::uint32_t prev = pick(rng);
    for (auto& i : s.idx) {
      if (pct(rng) < hit_percent) {
        i = prev;
      } else {
        std::uint32_t next;
        do next = pick(rng); while (next == prev);
        i = prev = next;
      }
    }
  }
  std::size_t hits = 0;
  for (std::size_t i = 1; i < s.idx.size(); ++i) hits += s.idx[i] == s.idx[i - 1];
  s.hit_rate = static_cast<double>(hits) / static_cast<double>(s.idx.size());
  return s;
}

// make_sequence, built once per arguments and kept for the whole run.
inline const Sequence& sequence_of(const std::string& pattern, std::size_t objects, int hit_percent = 0,
                                   std::size_t one_length = 4096) {
  static std::map<std::string, Sequence> cache;
  const std::string key = pattern + "/" + std::to_string(objects) + "/" + std::to_string(hit_percent) + "/" +
                          std::to_string(one_length);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, make_sequence(pattern, objects, hit_percent, one_length)).first;
  return it->second;
}

}  // namespace objprof::bench
