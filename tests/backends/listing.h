// Test helpers: an emitted barrier as asmjit's logger prints it, and as an asmjit Builder's
// node list with each instruction's read/write information. Both work for either
// architecture on any host: nothing here executes the code.
#pragma once

#include "backends/barrier_emitter.h"

#include <asmjit/arm/a64assembler.h>
#include <asmjit/arm/a64builder.h>
#include <asmjit/x86.h>

#include <catch2/catch.hpp>

#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace objprof::backends::test {

struct Listing {
  Status status;
  std::string text;                    // the logger's output
  std::vector<std::string> lines;      // instructions only (labels dropped), trimmed
  std::vector<std::string> mnemonics;  // first word of each line
};

inline Listing split_listing(Status status, std::string text) {
  Listing l{std::move(status), std::move(text), {}, {}};
  std::istringstream in(l.text);
  for (std::string line; std::getline(in, line);) {
    const auto b = line.find_first_not_of(" \t");
    if (b == std::string::npos) continue;
    line = line.substr(b);
    if (line.back() == ':') continue;  // label
    l.mnemonics.push_back(line.substr(0, line.find(' ')));
    l.lines.push_back(line);
  }
  return l;
}

template <class Assembler, class Regs>
Listing listing(asmjit::Arch arch, const EmitterConfig& cfg, const BarrierDescriptor& desc, const Regs& regs) {
  asmjit::CodeHolder code;
  REQUIRE(code.init(asmjit::Environment(arch)) == asmjit::kErrorOk);
  asmjit::StringLogger logger;
  code.setLogger(&logger);
  Assembler a(&code);
  Status s = emit_access_barrier(a, cfg, desc, regs);
  return split_listing(std::move(s), logger.data());
}

inline Listing a64_listing(const EmitterConfig& cfg, const BarrierDescriptor& desc, const A64BarrierRegs& regs) {
  return listing<asmjit::a64::Assembler>(asmjit::Arch::kAArch64, cfg, desc, regs);
}
inline Listing x86_listing(const EmitterConfig& cfg, const BarrierDescriptor& desc, const X86BarrierRegs& regs) {
  return listing<asmjit::x86::Assembler>(asmjit::Arch::kX64, cfg, desc, regs);
}

// The out-of-line form: the fast path's listing and the slow path's, emitted after a `ret`.
template <class Assembler, class Regs>
std::pair<Listing, Listing> split_listings(asmjit::Arch arch, const EmitterConfig& cfg, const BarrierDescriptor& desc,
                                           const Regs& regs) {
  asmjit::CodeHolder code;
  REQUIRE(code.init(asmjit::Environment(arch)) == asmjit::kErrorOk);
  asmjit::StringLogger logger;
  code.setLogger(&logger);
  Assembler a(&code);
  const asmjit::Label slow = a.newLabel(), resume = a.newLabel();
  Status fast = emit_access_barrier_fast(a, cfg, desc, regs, slow);
  std::string fast_text = logger.data();
  logger.clear();
  if (fast) a.bind(resume);
  Status s = fast ? emit_access_barrier_slow(a, cfg, desc, regs, slow, resume) : Status::Ok();
  return {split_listing(std::move(fast), std::move(fast_text)), split_listing(std::move(s), logger.data())};
}

// What the emitted instructions do to registers and memory, from asmjit's instruction
// introspection (InstAPI::queryRWInfo), in emission order.
struct Effects {
  std::set<std::uint32_t> written;           // register ids written
  std::set<std::uint32_t> read_before_write; // register ids read before any write to them
  std::set<std::uint32_t> store_bases;       // base registers of memory operands written
  int instructions = 0;
};

// `out_of_line`: the fast path, then (as a JIT would, after the method) the slow path.
template <class Builder, class Regs>
Effects effects(asmjit::Arch arch, const EmitterConfig& cfg, const BarrierDescriptor& desc, const Regs& regs,
                bool out_of_line = false) {
  asmjit::CodeHolder code;
  REQUIRE(code.init(asmjit::Environment(arch)) == asmjit::kErrorOk);
  Builder b(&code);
  Status s;
  if (out_of_line) {
    const asmjit::Label slow = b.newLabel(), resume = b.newLabel();
    s = emit_access_barrier_fast(b, cfg, desc, regs, slow);
    if (s) s = b.bind(resume) == asmjit::kErrorOk ? Status::Ok() : make_error(ErrorCode::kInvalidArgument, "bind");
    if (s) s = emit_access_barrier_slow(b, cfg, desc, regs, slow, resume);
  } else {
    s = emit_access_barrier(b, cfg, desc, regs);
  }
  INFO((s ? std::string() : s.error().message));
  REQUIRE(s.ok());
  Effects fx;
  for (asmjit::BaseNode* n = b.firstNode(); n != nullptr; n = n->next()) {
    if (!n->isInst()) continue;
    auto* inst = n->as<asmjit::InstNode>();
    ++fx.instructions;
    asmjit::InstRWInfo rw;
    REQUIRE(asmjit::InstAPI::queryRWInfo(arch, inst->baseInst(), inst->operands(), inst->opCount(), &rw) ==
            asmjit::kErrorOk);
    auto note_read = [&](std::uint32_t id) {
      if (!fx.written.count(id)) fx.read_before_write.insert(id);
    };
    // `xor r, r` reads nothing: asmjit reports its operands as read, its register allocator
    // knows the zeroing idiom.
    const bool zeroing = arch == asmjit::Arch::kX64 && inst->id() == asmjit::x86::Inst::kIdXor &&
                         inst->opCount() == 2 && inst->op(0) == inst->op(1);
    for (std::uint32_t i = 0; i < inst->opCount(); ++i) {
      const asmjit::Operand& op = inst->op(i);
      const asmjit::OpRWInfo& info = rw.operand(i);
      if (op.isReg() && info.isRead() && !zeroing) note_read(op.id());
      if (op.isMem()) {
        const asmjit::BaseMem& m = op.as<asmjit::BaseMem>();
        if (m.hasBaseReg()) note_read(m.baseId());
        if (m.hasIndexReg()) note_read(m.indexId());
        if (info.isWrite() && m.hasBaseReg()) fx.store_bases.insert(m.baseId());
      }
    }
    for (std::uint32_t i = 0; i < inst->opCount(); ++i) {
      const asmjit::Operand& op = inst->op(i);
      if (op.isReg() && rw.operand(i).isWrite()) fx.written.insert(op.id());
    }
  }
  return fx;
}

}  // namespace objprof::backends::test
