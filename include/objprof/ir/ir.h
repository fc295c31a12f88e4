// The objprof register IR: a Dalvik-like, non-SSA intermediate representation of one method's
// control-flow graph. It is the input of the redundant-barrier elimination passes
// (objprof/ir/elim.h): a runtime's compiler lowers a method into a Function, runs a pass, and
// learns for every access site whether the access barrier is still needed.
//
// Shape:
//  - A Module holds named Types (with reference and scalar fields) and Functions.
//  - A Function has `num_regs` virtual registers v0..v{n-1}; registers may be assigned many
//    times (as in bytecode). Registers that are read before any assignment hold whatever the
//    caller left there (parameters, or an unknown value).
//  - A Function is a list of Blocks; blocks[0] is the entry. Each block is a list of
//    instructions whose last one, and only that one, is a terminator (goto, br, switch, ret).
//  - Every instruction that accesses an object (field get/put, array get/put/length, virtual
//    invoke, monitor enter/exit, reference compare) carries a site id, unique in its function.
//
// The textual form is described in docs/ir-format.md (parser and printer: objprof/ir/text.h).
// Thread safety: plain values; no shared state.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace objprof::ir {

using Reg = std::uint32_t;
using BlockId = std::uint32_t;
using SiteId = std::uint32_t;

inline constexpr Reg kNoReg = std::numeric_limits<Reg>::max();
inline constexpr BlockId kNoBlock = std::numeric_limits<BlockId>::max();
inline constexpr SiteId kNoSite = std::numeric_limits<SiteId>::max();

// Limits the parser and the verifier enforce (keep bitsets and ids small).
inline constexpr std::uint32_t kMaxRegs = 1u << 16;
inline constexpr std::uint32_t kMaxInvokeArgs = 255;

enum class Opcode : std::uint8_t {
  // Definitions without object access.
  kConst,        // vD = const IMM
  kNull,         // vD = null
  kMove,         // vD = move vA
  kBinary,       // vD = add|sub|mul|div|rem|and|or|xor|shl|shr vA, vB
  kCompare,      // vD = cmp.lt|le|gt|ge|eq|ne vA, vB            (scalar compare)
  kNew,          // vD = new Type                                (allocation: may GC)
  kNewArray,     // vD = newarray ELEM, vLen                     (allocation: may GC)
  // Object accesses (each has a site).
  kGetField,     // vD = getfield vObj, Type.field #S
  kPutField,     // putfield vObj, Type.field, vVal #S
  kArrayGet,     // vD = aget vArr, vIdx #S
  kArrayPut,     // aput vArr, vIdx, vVal #S
  kArrayLength,  // vD = alen vArr #S
  kInvoke,       // [vD =] invoke[.nogc][.marked] name(vRecv, args...) #S  (receiver accessed)
  kMonitorEnter, // monitorenter vObj #S
  kMonitorExit,  // monitorexit vObj #S
  kRefEqual,     // vD = refeq vA, vB #S                          (both operands accessed)
  // (kGetField..kRefEqual must stay contiguous: is_access() tests the range.)
  // Calls without a receiver and explicit GC points.
  kCallStatic,   // [vD =] call[.nogc][.marked] name(args...)
  kSafepoint,    // safepoint
  // Terminators.
  kGoto,         // goto L
  kBranch,       // br vCond, Ltrue, Lfalse
  kSwitch,       // switch vKey, L0, L1, ...
  kReturn,       // ret [vA]
};

enum class BinaryOp : std::uint8_t { kAdd, kSub, kMul, kDiv, kRem, kAnd, kOr, kXor, kShl, kShr };
enum class CompareOp : std::uint8_t { kLt, kLe, kGt, kGe, kEq, kNe };

// The operand registers of an instruction: up to four inline (every opcode but calls), more
// on the heap. Keeps the passes' walks over instructions free of pointer chasing.
class RegList {
 public:
  static constexpr std::uint32_t kInline = 4;
  RegList() = default;
  RegList(std::initializer_list<Reg> regs) {
    for (Reg r : regs) push_back(r);
  }
  RegList(const RegList&) = default;
  RegList& operator=(const RegList&) = default;
  RegList(RegList&& o) noexcept : size_(o.size_), inline_(o.inline_), heap_(std::move(o.heap_)) { o.size_ = 0; }
  RegList& operator=(RegList&& o) noexcept {
    size_ = o.size_;
    inline_ = o.inline_;
    heap_ = std::move(o.heap_);
    o.size_ = 0;
    return *this;
  }

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const Reg* data() const { return size_ > kInline ? heap_.data() : inline_.data(); }
  Reg* data() { return size_ > kInline ? heap_.data() : inline_.data(); }
  const Reg* begin() const { return data(); }
  const Reg* end() const { return data() + size_; }
  Reg* begin() { return data(); }
  Reg* end() { return data() + size_; }
  Reg operator[](std::size_t i) const { return data()[i]; }
  Reg& operator[](std::size_t i) { return data()[i]; }
  void push_back(Reg r) {
    if (size_ < kInline) {
      inline_[size_] = r;
    } else {
      if (size_ == kInline) heap_.assign(inline_.begin(), inline_.end());
      heap_.push_back(r);
    }
    ++size_;
  }
  void resize(std::size_t n) {
    while (size_ > n) pop_back();
    while (size_ < n) push_back(0);
  }
  void pop_back() {
    if (size_ > kInline) {
      heap_.pop_back();
      if (size_ - 1 == kInline) {
        std::copy(heap_.begin(), heap_.end(), inline_.begin());
        heap_.clear();
      }
    }
    --size_;
  }
  bool operator==(const RegList& o) const { return size_ == o.size_ && std::equal(begin(), end(), o.begin()); }

 private:
  std::uint32_t size_ = 0;
  std::array<Reg, kInline> inline_{};
  std::vector<Reg> heap_;  // all elements, when there are more than kInline
};

// One instruction. Operands are registers in `args`; the meaning of each slot is fixed per
// opcode (see Opcode). `targets` is used by terminators only.
struct Instr {
  Opcode op = Opcode::kSafepoint;
  std::uint8_t subop = 0;        // BinaryOp / CompareOp
  bool may_gc = true;            // kInvoke / kCallStatic: false when written `.nogc`
  // kInvoke / kCallStatic, written `.marked`: every callee returns an object that is marked in
  // the epoch the call returns in (a summary the callees' decisions prove; see elim.h).
  bool result_marked = false;
  Reg dst = kNoReg;              // defined register, or kNoReg
  RegList args;                  // used registers
  std::vector<BlockId> targets;  // terminator successors, in order
  std::int64_t imm = 0;          // kConst value
  std::string type;              // kNew: type; kNewArray: element type; field ops: owner type
  std::string name;              // field ops: field name; calls: callee
  SiteId site = kNoSite;         // access instructions only

  bool operator==(const Instr&) const = default;
};

struct Block {
  std::string name;
  std::vector<Instr> instrs;  // non-empty in a valid function; the last one is the terminator

  bool operator==(const Block&) const = default;
};

struct Field {
  std::string name;
  std::string kind;  // "ref" for a reference field, otherwise a scalar kind (int, long, ...)
  bool is_ref() const { return kind == "ref"; }
  bool operator==(const Field&) const = default;
};

struct Type {
  std::string name;
  std::vector<Field> fields;
  const Field* find_field(std::string_view field) const;
  bool operator==(const Type&) const = default;
};

struct Function {
  std::string name;
  std::uint32_t num_regs = 0;
  std::vector<Reg> params;    // registers holding the arguments on entry
  // params[0] is the receiver (`this`): every call reaches the function through an invoke that
  // accessed it (text form: `func C.m(this v0, v1)`).
  bool has_receiver = false;
  std::vector<Block> blocks;  // blocks[0] is the entry

  std::size_t num_instrs() const;
  bool operator==(const Function&) const = default;
};

struct Module {
  std::vector<Type> types;
  std::vector<Function> functions;

  const Type* find_type(std::string_view name) const;
  bool operator==(const Module&) const = default;
};

// --- Opcode properties --------------------------------------------------------------------

inline bool is_terminator(Opcode op) {
  return op == Opcode::kGoto || op == Opcode::kBranch || op == Opcode::kSwitch || op == Opcode::kReturn;
}
// Does the instruction access an object (and so have a site)?
inline bool is_access(Opcode op) { return op >= Opcode::kGetField && op <= Opcode::kRefEqual; }
// Number of accessed operands (0, 1, or 2 for refeq); they are args[0] (and args[1]).
inline unsigned num_accesses(const Instr& instr) {
  if (!is_access(instr.op) || instr.args.empty()) return 0;
  return instr.op == Opcode::kRefEqual && instr.args.size() >= 2 ? 2 : 1;
}
// May a GC run while this instruction executes? Allocation, `safepoint`, and calls without
// `.nogc`. For a call the receiver access happens before the GC; for an allocation the GC
// happens before the new object exists.
inline bool may_gc(const Instr& instr) {
  switch (instr.op) {
    case Opcode::kNew:
    case Opcode::kNewArray:
    case Opcode::kSafepoint:
      return true;
    case Opcode::kInvoke:
    case Opcode::kCallStatic:
      return instr.may_gc;
    default:
      return false;
  }
}

std::string_view opcode_name(Opcode op);
std::string_view binary_op_name(BinaryOp op);
std::string_view compare_op_name(CompareOp op);

}  // namespace objprof::ir
