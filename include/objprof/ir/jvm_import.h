// Importer from JVM class files into the register IR, so elimination can be measured on real
// Java code.
//
// Mapping: local variable slot i is register v{i}; operand stack slot s is register
// v{max_locals + s}; one scratch register follows. getfield/putfield, x(a)load/x(a)store,
// arraylength, invoke{virtual,special,interface} (receiver), monitorenter/monitorexit and
// if_acmp{eq,ne} (both operands) become accesses; new/newarray are allocations; static calls
// and invokedynamic are calls that may GC. Exception handlers become extra edges: inside a try
// range every instruction ends its block, and each such block also branches to the handler,
// whose first instruction defines the caught exception.
//
// Methods using jsr/ret, or whose bytecode does not verify structurally (stack heights that
// disagree at a join, jumps out of the code), are not imported; each gets a message in
// ClassImport::skipped and the rest of the class still imports.
#pragma once

#include "objprof/ir/ir.h"
#include "objprof/result.h"

#include <string>
#include <string_view>
#include <vector>

namespace objprof::ir {

struct ClassImport {
  Module module;                      // one Function per imported method ("Class.name" + index)
  std::vector<std::string> skipped;   // "Class.method(desc): reason"
};

// Parses one class file. Errors (kCorrupt) only when the class file itself is malformed.
Result<ClassImport> import_class(std::string_view bytes);

}  // namespace objprof::ir
