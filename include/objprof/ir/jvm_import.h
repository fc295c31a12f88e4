// Importer from JVM class files into the register IR, so elimination can be measured on real
// Java code.
//
// Mapping: local variable slot i is register v{i}; operand stack slot s is register
// v{max_locals + s}; one scratch register follows. getfield/putfield, x(a)load/x(a)store,
// arraylength, invoke{virtual,special,interface} (receiver), monitorenter/monitorexit and
// if_acmp{eq,ne} (both operands) become accesses; new/newarray are allocations; static calls
// and invokedynamic are calls that may GC; a call is named "Owner.method". Instance methods
// have a receiver (`this`, v0). Exception handlers become extra edges: inside a try
// range every instruction ends its block, and each such block also branches to the handler,
// whose first instruction defines the caught exception.
//
// Methods using jsr/ret, or whose bytecode does not verify structurally (stack heights that
// disagree at a join, jumps out of the code), are not imported; each gets a message in
// ClassImport::skipped and the rest of the class still imports.
#pragma once

#include "objprof/ir/ir.h"
#include "objprof/result.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace objprof::ir {

// What the class hierarchy needs to know about one method (objprof/ir/jvm_program.h).
struct JvmMethod {
  std::string name;              // as the IR spells it (ir names: see call instructions)
  std::string descriptor;        // e.g. "(I)Ljava/lang/String;"
  std::uint16_t access = 0;      // JVM access flags (ACC_STATIC 0x8, ACC_PRIVATE 0x2, ACC_NATIVE 0x100, ACC_ABSTRACT 0x400)
  std::int32_t function = -1;    // index in ClassImport::module.functions, or -1 (no code, or skipped)
};

struct JvmClass {
  std::string name;                     // internal name as the IR spells it ("java/lang/String")
  std::string super;                    // "" for java/lang/Object (and module-info)
  std::vector<std::string> interfaces;
  std::uint16_t access = 0;             // ACC_INTERFACE 0x200, ACC_ABSTRACT 0x400, ACC_FINAL 0x10
  std::vector<JvmMethod> methods;
};

// The method descriptor of one call instruction (block, index in the block).
struct CallDescriptor {
  BlockId block;
  std::uint32_t instr;
  std::string descriptor;  // e.g. "(Ljava/lang/Object;)Z"
};

struct ClassImport {
  Module module;                      // one Function per imported method ("Class.name" + index)
  std::vector<std::string> skipped;   // "Class.method(desc): reason"
  JvmClass info;                      // hierarchy and methods, for interprocedural summaries
  // Per function of `module`: the descriptor of each call (the JVM selects methods by name and
  // descriptor; the IR names a call by owner and name only).
  std::vector<std::vector<CallDescriptor>> call_descriptors;
};

// Parses one class file. Errors (kCorrupt) only when the class file itself is malformed.
Result<ClassImport> import_class(std::string_view bytes);

}  // namespace objprof::ir
