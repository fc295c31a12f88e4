// Which functions a call instruction may run. The soundness checker uses it to run a call's
// callees as they are (their allocations, safepoints and own calls), instead of trusting the
// call's `.nogc` flag: a may-GC summary that is wrong is then caught as a violation in the
// caller. A program that knows its call graph (e.g. the JVM importer's class hierarchy,
// objprof/ir/jvm_program.h) implements it.
#pragma once

#include "objprof/ir/ir.h"

#include <vector>

namespace objprof::ir {

class CallResolver {
 public:
  virtual ~CallResolver() = default;
  // Fills `out` with every function the call (kInvoke or kCallStatic) may run and returns true,
  // or returns false when some possible callee is unknown (native, outside the program).
  virtual bool callees(const Instr& call, std::vector<const Function*>* out) const = 0;
};

}  // namespace objprof::ir
