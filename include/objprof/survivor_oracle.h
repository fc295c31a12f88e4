// SurvivorOracle: a collector's answer, per object, to "did it survive this GC, and where is it
// now?", so that the stale tracker can learn the fates of the objects it tracks from the
// collector's own state (mark bits, forwarding pointers) instead of from a hook call per moved
// or dead object. It is the shape of a JVM's weak-table processing (JVMTI's tag map asks an
// is-alive closure and the forwardee for each tagged object): the profiler asks about its
// tracked objects only, so a collection that moves or frees millions of small objects costs it
// nothing per object (docs/embedding.md, "Survivors from the collector").
//
// The contract (ProfilerOptions::fate_reports, Profiler::report_survivors):
// - The profiler asks about each tracked object once, with the address the object had when
//   the GC began, in batches of at most kSurvivorBatch (one virtual call per batch, so the
//   collector's loop over a batch is as tight as its own code), from inside report_survivors,
//   on the thread that called it.
// - Answers describe this GC: an object allocated before gc_begin is either dead (0), in the
//   same place (its address), or moved (its new address, inside a registered space). Objects
//   allocated inside the bracket are never asked about.
// - survivors() only reads the collector's state; it must not call back into the profiler.
#pragma once

#include "objprof/heap_space.h"

#include <cstddef>
#include <span>

namespace objprof {

// The most addresses one survivors() call is asked about: the profiler's scratch for the
// questions and answers is two batches (64 KiB), however many objects it tracks.
inline constexpr std::size_t kSurvivorBatch = 4096;

class SurvivorOracle {
 public:
  virtual ~SurvivorOracle() = default;
  // For each i: post_gc[i] = the post-GC address of the object that started at pre_gc[i] when
  // the GC began (pre_gc[i] itself if it did not move), or 0 if it died. The spans have the
  // same length.
  virtual void survivors(std::span<const Address> pre_gc, std::span<Address> post_gc) const noexcept = 0;
};

}  // namespace objprof
