// Register kinds for the JIT: which IR registers may hold a reference.
//
// The interpreter tags every register at run time; compiled code keeps plain machine words, so
// it must know statically which registers to store into the frame's root slots at a GC point
// and which operand checks ("getfield of a scalar register", "arithmetic on a reference") can
// be decided at compile time. A flow-insensitive, interprocedural inference over the module:
//
//   kind(r) = join of the kinds every definition of r can produce
//     (scalar | ref; both = dynamic: compiled code keeps a tag beside the value)
//
// Definitions include a function's parameters (joined over every call site; run() passes
// scalars to an entry) and the register file's initial {0, scalar} when some use of r may read
// it before any definition. `aget` produces the element kind of its array operand, tracked the
// same way (`newarray` of a reference element type gives reference elements; an array of
// unknown origin gives a dynamic result whose tag compiled code reads from the array's type).
#pragma once

#include "sim/interp.h"

#include <cstdint>
#include <vector>

namespace objprof::sim::jit {

// Bit set: join is bitwise or.
enum Kind : std::uint8_t { kNoKind = 0, kScalar = 1, kRef = 2, kDynamic = 3 };

struct FunctionKinds {
  std::vector<std::uint8_t> reg;          // Kind per register
  std::vector<std::uint8_t> elem;         // Kind of the elements, if the register holds an array
  std::vector<std::uint8_t> maybe_uninit; // some use may read the register before any definition
  std::uint8_t ret = kNoKind, ret_elem = kNoKind;
};

std::vector<FunctionKinds> infer_kinds(const sim::CompileRequest& request);

}  // namespace objprof::sim::jit
