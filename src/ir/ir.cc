// Opcode properties and small helpers of the register IR.
#include "objprof/ir/ir.h"

namespace objprof::ir {

const Field* Type::find_field(std::string_view field) const {
  for (const Field& f : fields) {
    if (f.name == field) return &f;
  }
  return nullptr;
}

std::size_t Function::num_instrs() const {
  std::size_t n = 0;
  for (const Block& b : blocks) n += b.instrs.size();
  return n;
}

const Type* Module::find_type(std::string_view name) const {
  for (const Type& t : types) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::string_view opcode_name(Opcode op) {
  switch (op) {
    case Opcode::kConst: return "const";
    case Opcode::kNull: return "null";
    case Opcode::kMove: return "move";
    case Opcode::kBinary: return "binary";
    case Opcode::kCompare: return "cmp";
    case Opcode::kNew: return "new";
    case Opcode::kNewArray: return "newarray";
    case Opcode::kGetField: return "getfield";
    case Opcode::kPutField: return "putfield";
    case Opcode::kArrayGet: return "aget";
    case Opcode::kArrayPut: return "aput";
    case Opcode::kArrayLength: return "alen";
    case Opcode::kInvoke: return "invoke";
    case Opcode::kMonitorEnter: return "monitorenter";
    case Opcode::kMonitorExit: return "monitorexit";
    case Opcode::kRefEqual: return "refeq";
    case Opcode::kCallStatic: return "call";
    case Opcode::kSafepoint: return "safepoint";
    case Opcode::kGoto: return "goto";
    case Opcode::kBranch: return "br";
    case Opcode::kSwitch: return "switch";
    case Opcode::kReturn: return "ret";
  }
  return "?";
}

std::string_view binary_op_name(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd: return "add";
    case BinaryOp::kSub: return "sub";
    case BinaryOp::kMul: return "mul";
    case BinaryOp::kDiv: return "div";
    case BinaryOp::kRem: return "rem";
    case BinaryOp::kAnd: return "and";
    case BinaryOp::kOr: return "or";
    case BinaryOp::kXor: return "xor";
    case BinaryOp::kShl: return "shl";
    case BinaryOp::kShr: return "shr";
  }
  return "?";
}

std::string_view compare_op_name(CompareOp op) {
  switch (op) {
    case CompareOp::kLt: return "lt";
    case CompareOp::kLe: return "le";
    case CompareOp::kGt: return "gt";
    case CompareOp::kGe: return "ge";
    case CompareOp::kEq: return "eq";
    case CompareOp::kNe: return "ne";
  }
  return "?";
}

}  // namespace objprof::ir
