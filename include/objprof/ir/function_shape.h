// FunctionShape: what the analyses and the global elimination pass need to know about one
// function, and nothing else — its blocks and their successors, and for every instruction the
// register it defines, the registers it uses, whether it is a copy, which of its operands it
// accesses as objects (each access instruction has a site) and whether it may reach a GC
// point. Opcodes, types, field and callee names stay with the VM.
//
// It is stored as flat arrays (about 20 bytes per instruction against ~160 for an ir::Instr),
// so the analyses walk a 100k-block function without leaving the cache hierarchy's fast end;
// objprof's own IR is one source of shapes (`shape_of`), and a VM can describe its bytecode
// directly with FunctionShapeBuilder without translating it into objprof's opcodes.
//
// Instructions are numbered across the function: block b holds [block_begin[b],
// block_begin[b+1]). An access decision is reported per (block, index in block, operand).
// Blocks may come in any order; the passes run fastest on large functions when the order is
// close to reverse post-order (otherwise the global pass lays out a copy first: ElimOptions::layout).
#pragma once

#include "objprof/ir/csr_lists.h"
#include "objprof/ir/ir.h"
#include "objprof/result.h"

#include <cstdint>
#include <span>
#include <vector>

namespace objprof::ir {

using InstrId = std::uint32_t;

struct FunctionShape {
  enum Flag : std::uint8_t {
    kMayGc = 1,  // a GC may run while the instruction executes (after its accesses)
    kCopy = 2,   // `dst = uses[0]`: the defined register holds the same object
    kAllocates = 4,  // `dst` receives a freshly allocated object (after any GC the instruction runs)
    kResultMarked = 8,  // `dst` receives an object already marked in the current epoch (a call
                        // whose callees are known to return one)
    kReturns = 16,      // returns uses[0] to the caller
  };
  // Accessed operands are uses[0..kMaxAccessedOperand] of an instruction (a bit mask).
  static constexpr unsigned kMaxAccessedOperand = 7;

  std::uint32_t num_regs = 0;
  // The register holding the receiver on entry, which the caller's invoke accessed, or kNoReg.
  Reg receiver = kNoReg;
  std::vector<InstrId> block_begin;  // blocks + 1 entries
  CsrLists<BlockId> succs;           // per block, in the VM's order (duplicates allowed)
  // Per instruction:
  std::vector<Reg> dst;                  // defined register, or kNoReg
  std::vector<std::uint32_t> use_begin;  // instructions + 1 entries, into `uses`
  std::vector<std::uint8_t> flags;       // Flag bits
  std::vector<std::uint8_t> accessed;    // bit k: operand k is accessed as an object
  std::vector<SiteId> site;              // kNoSite unless `accessed` is non-zero
  std::vector<Reg> uses;

  std::size_t num_blocks() const { return block_begin.empty() ? 0 : block_begin.size() - 1; }
  std::size_t num_instrs() const { return dst.size(); }
  std::span<const Reg> operands(InstrId i) const {
    return {uses.data() + use_begin[i], static_cast<std::size_t>(use_begin[i + 1] - use_begin[i])};
  }
  bool may_gc(InstrId i) const { return (flags[i] & kMayGc) != 0; }
  bool is_copy(InstrId i) const { return (flags[i] & kCopy) != 0; }
  bool allocates(InstrId i) const { return (flags[i] & kAllocates) != 0; }
  bool result_marked(InstrId i) const { return (flags[i] & kResultMarked) != 0; }
  bool returns_value(InstrId i) const { return (flags[i] & kReturns) != 0; }
  // Bytes held by the arrays (for memory-per-instruction reports).
  std::size_t memory_bytes() const;
};

// objprof's IR as a shape: accesses, copies (`move`) and GC points as ir.h defines them.
FunctionShape shape_of(const Function& f);
// The same into `out`, reusing its storage (FunctionAnalyses::reset does).
void shape_of(const Function& f, FunctionShape& out);

// Structural checks on a shape from any source: sizes agree, at least one block, registers
// below num_regs, successors exist and the entry has no predecessor, accessed operands exist
// and each access instruction has a site, unique in the function, copies have one operand,
// allocations define a register, the receiver is a register.
Status verify_shape(const FunctionShape& shape);

// How a VM describes one function: blocks in order (the first is the entry), then for each
// block its instructions and successors. finish() verifies the result.
//
//   FunctionShapeBuilder b(num_regs);
//   b.begin_block();                                    // block 0
//   b.add_instr(kNoReg, {obj}, /*accessed=*/0b1, 0, site);
//   b.add_successor(1);
//   ...
//   Result<FunctionShape> shape = std::move(b).finish();
class FunctionShapeBuilder {
 public:
  explicit FunctionShapeBuilder(std::uint32_t num_regs);
  BlockId begin_block();
  void add_instr(Reg dst, std::span<const Reg> uses, std::uint8_t accessed, std::uint8_t flags, SiteId site = kNoSite);
  void add_instr(Reg dst, std::initializer_list<Reg> uses, std::uint8_t accessed, std::uint8_t flags,
                 SiteId site = kNoSite) {
    add_instr(dst, std::span<const Reg>(uses.begin(), uses.size()), accessed, flags, site);
  }
  void add_successor(BlockId target);
  // The register that holds the receiver on entry (see FunctionShape::receiver).
  void set_receiver(Reg r) { s_.receiver = r; }
  Result<FunctionShape> finish() &&;

 private:
  void close_block();
  FunctionShape s_;
  std::vector<std::pair<std::uint32_t, BlockId>> edges_;
  bool open_ = false;
};

}  // namespace objprof::ir
