// JVM class file importer (see jvm_import.h for the mapping). Reading is bounds-checked
// everywhere: a malformed class gives a kCorrupt error, a method we cannot translate is
// skipped with a reason, and nothing here throws.
#include "objprof/ir/jvm_import.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

namespace objprof::ir {
namespace {

class Reader {
 public:
  explicit Reader(std::string_view b) : b_(b) {}
  bool ok() const { return ok_; }
  std::size_t pos() const { return pos_; }
  std::uint32_t u1() { return take(1); }
  std::uint32_t u2() { return take(2); }
  std::uint32_t u4() { return take(4); }
  std::string_view bytes(std::size_t n) {
    if (!ok_ || n > b_.size() - pos_) {
      ok_ = false;
      return {};
    }
    auto s = b_.substr(pos_, n);
    pos_ += n;
    return s;
  }

 private:
  std::uint32_t take(int n) {
    if (!ok_ || static_cast<std::size_t>(n) > b_.size() - pos_) {
      ok_ = false;
      return 0;
    }
    std::uint32_t v = 0;
    for (int i = 0; i < n; ++i) v = (v << 8) | static_cast<unsigned char>(b_[pos_++]);
    return v;
  }
  std::string_view b_;
  std::size_t pos_ = 0;
  bool ok_ = true;
};

struct CpEntry {
  std::uint8_t tag = 0;
  std::uint32_t a = 0, b = 0;
  std::string utf8;
};

// A class or member name as the IR text can hold it: a byte the IR's identifiers do not allow
// (anything but ASCII letters, digits, _ $ < > / -, or a digit, >, / or - first) becomes $ and
// two hex digits, so every imported module prints and parses back. Names from javac are kept.
std::string ir_name(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool start = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' || c == '<';
    const bool rest = (c >= '0' && c <= '9') || c == '>' || c == '/' || c == '-';
    if (start || (i > 0 && rest))
      out.push_back(c);
    else
      out += fmt::format("${:02x}", static_cast<unsigned char>(c));
  }
  return out;
}

struct Pool {
  std::vector<CpEntry> e;
  const CpEntry* at(std::uint32_t i) const { return i < e.size() ? &e[i] : nullptr; }
  std::string utf8(std::uint32_t i) const {
    const CpEntry* c = at(i);
    return c != nullptr && c->tag == 1 ? c->utf8 : std::string();
  }
  std::string class_name(std::uint32_t i) const {
    const CpEntry* c = at(i);
    return c != nullptr && c->tag == 7 ? ir_name(utf8(c->a)) : std::string();
  }
  // Field/method/interface-method ref or invokedynamic: (owner, name, descriptor).
  bool member(std::uint32_t i, std::string* owner, std::string* name, std::string* desc) const {
    const CpEntry* c = at(i);
    if (c == nullptr) return false;
    std::uint32_t nat = 0;
    if (c->tag == 9 || c->tag == 10 || c->tag == 11) {
      *owner = class_name(c->a);
      nat = c->b;
    } else if (c->tag == 18 || c->tag == 17) {
      *owner = "indy";
      nat = c->b;
    } else {
      return false;
    }
    const CpEntry* n = at(nat);
    if (n == nullptr || n->tag != 12) return false;
    *name = ir_name(utf8(n->a));
    *desc = utf8(n->b);
    return !owner->empty() && !name->empty() && !desc->empty();
  }
};

// Slots taken by a field descriptor or a return type: 0 (V), 1, 2 (J, D).
int slots_of(char c) { return c == 'V' ? 0 : (c == 'J' || c == 'D') ? 2 : 1; }

// Parameter slot sizes and return slots of a method descriptor; false if malformed.
bool parse_method_desc(const std::string& d, std::vector<int>* params, int* ret) {
  if (d.empty() || d[0] != '(') return false;
  std::size_t i = 1;
  while (i < d.size() && d[i] != ')') {
    std::size_t start = i;
    while (i < d.size() && d[i] == '[') ++i;
    if (i >= d.size()) return false;
    if (d[i] == 'L') {
      i = d.find(';', i);
      if (i == std::string::npos) return false;
    }
    params->push_back(i > start ? 1 : slots_of(d[i]));
    ++i;
  }
  if (i + 1 >= d.size()) return false;  // no ')' or no return type
  *ret = slots_of(d[i + 1]);
  return true;
}

struct Insn {
  std::uint32_t off = 0;
  std::uint8_t op = 0;
  std::uint32_t len = 1;
  bool wide = false;
  std::int64_t i1 = 0, i2 = 0;        // operands (index, constant, branch offset...)
  std::vector<std::int64_t> targets;  // switch: default first, then cases (absolute)
};

class MethodTranslator {
 public:
  MethodTranslator(const Pool& pool, Module* module, std::string_view code, std::uint32_t max_stack,
                   std::uint32_t max_locals, std::vector<std::array<std::uint32_t, 3>> handlers)
      : pool_(pool), m_(module), code_(code), S_(max_stack), L_(max_locals), handlers_(std::move(handlers)) {}

  // Returns "" on success, otherwise why the method was skipped.
  std::string run(Function* f) {
    if (std::string e = decode(); !e.empty()) return e;
    if (std::string e = heights(); !e.empty()) return e;
    return emit(f);
  }

 private:
  Reg local(std::int64_t i) { return i < 0 || i >= L_ ? (bad_ = true, 0) : static_cast<Reg>(i); }
  Reg st(std::int64_t s) { return s < 0 || s >= S_ + 2 ? (bad_ = true, 0) : static_cast<Reg>(L_ + s); }
  Reg scratch() const { return L_ + S_ + 2; }

  std::string decode() {
    Reader r(code_);
    while (r.pos() < code_.size()) {
      Insn in;
      in.off = static_cast<std::uint32_t>(r.pos());
      in.op = static_cast<std::uint8_t>(r.u1());
      std::uint8_t op = in.op;
      if (op == 0xc4) {  // wide
        in.wide = true;
        in.op = op = static_cast<std::uint8_t>(r.u1());
        in.i1 = r.u2();
        if (op == 0x84) in.i2 = static_cast<std::int16_t>(r.u2());
        if (!((op >= 0x15 && op <= 0x19) || (op >= 0x36 && op <= 0x3a) || op == 0x84)) return "bad wide instruction";
      } else if (op == 0x10 || op == 0x12 || (op >= 0x15 && op <= 0x19) || (op >= 0x36 && op <= 0x3a) || op == 0xbc) {
        in.i1 = op == 0x10 ? static_cast<std::int8_t>(r.u1()) : static_cast<std::int64_t>(r.u1());
      } else if (op == 0x11) {
        in.i1 = static_cast<std::int16_t>(r.u2());
      } else if (op == 0x13 || op == 0x14 || (op >= 0xb2 && op <= 0xb8) || op == 0xbb || op == 0xbd || op == 0xc0 || op == 0xc1) {
        in.i1 = r.u2();
      } else if (op == 0x84) {
        in.i1 = r.u1();
        in.i2 = static_cast<std::int8_t>(r.u1());
      } else if ((op >= 0x99 && op <= 0xa7) || op == 0xc6 || op == 0xc7) {
        in.i1 = in.off + static_cast<std::int16_t>(r.u2());
      } else if (op == 0xc8) {
        in.i1 = in.off + static_cast<std::int32_t>(r.u4());
      } else if (op == 0xb9 || op == 0xba) {
        in.i1 = r.u2();
        r.u2();
      } else if (op == 0xc5) {
        in.i1 = r.u2();
        in.i2 = r.u1();
      } else if (op == 0xaa || op == 0xab) {
        // 0-3 pad bytes up to a 4-byte boundary of the code; skipped in one bounded step, as a
        // loop on pos() never ends once the reader has failed (bytecode ending inside the pad).
        r.bytes((4 - r.pos() % 4) % 4);
        in.targets.push_back(in.off + static_cast<std::int32_t>(r.u4()));
        if (op == 0xaa) {
          std::int64_t lo = static_cast<std::int32_t>(r.u4()), hi = static_cast<std::int32_t>(r.u4());
          if (hi < lo || hi - lo > 65535) return "bad tableswitch";
          for (std::int64_t k = lo; k <= hi && r.ok(); ++k) in.targets.push_back(in.off + static_cast<std::int32_t>(r.u4()));
        } else {
          std::uint32_t n = r.u4();
          if (n > 65535) return "bad lookupswitch";
          for (std::uint32_t k = 0; k < n && r.ok(); ++k) {
            r.u4();
            in.targets.push_back(in.off + static_cast<std::int32_t>(r.u4()));
          }
        }
      } else if (op == 0xa8 || op == 0xa9 || op == 0xc9) {
        return "jsr/ret subroutines are not supported";
      } else if (op > 0xc9) {
        return fmt::format("unknown opcode 0x{:02x} at {}", op, in.off);
      }
      if (!r.ok()) return "truncated bytecode";
      in.len = static_cast<std::uint32_t>(r.pos()) - in.off;
      index_[in.off] = static_cast<std::uint32_t>(insns_.size());
      insns_.push_back(std::move(in));
    }
    return {};
  }

  // Stack effect in slots: pops and pushes. Returns false if the constant pool entry is bad.
  bool effect(const Insn& in, int* pop, int* push) {
    std::uint8_t op = in.op;
    *pop = 0;
    *push = 0;
    auto arith_cat = [](int k) { return (k % 4 == 1 || k % 4 == 3) ? 2 : 1; };  // l, d
    if (op == 0x00 || op == 0x84 || op == 0xa7 || op == 0xc8 || op == 0xc0 || op == 0xb1) return true;
    if (op >= 0x01 && op <= 0x08) return *push = 1, true;
    if (op == 0x09 || op == 0x0a || op == 0x0e || op == 0x0f) return *push = 2, true;
    if (op >= 0x0b && op <= 0x0d) return *push = 1, true;
    if (op == 0x10 || op == 0x11 || op == 0x12 || op == 0x13) return *push = 1, true;
    if (op == 0x14) return *push = 2, true;
    if (op >= 0x15 && op <= 0x19) return *push = (op == 0x16 || op == 0x18) ? 2 : 1, true;
    if (op >= 0x1a && op <= 0x2d) return *push = arith_cat((op - 0x1a) / 4), true;
    if (op >= 0x2e && op <= 0x35) return *pop = 2, *push = (op == 0x2f || op == 0x31) ? 2 : 1, true;
    if (op >= 0x36 && op <= 0x3a) return *pop = (op == 0x37 || op == 0x39) ? 2 : 1, true;
    if (op >= 0x3b && op <= 0x4e) return *pop = arith_cat((op - 0x3b) / 4), true;
    if (op >= 0x4f && op <= 0x56) return *pop = (op == 0x50 || op == 0x52) ? 4 : 3, true;
    if (op == 0x57) return *pop = 1, true;
    if (op == 0x58) return *pop = 2, true;
    if (op == 0x59) return *pop = 1, *push = 2, true;
    if (op == 0x5a) return *pop = 2, *push = 3, true;
    if (op == 0x5b) return *pop = 3, *push = 4, true;
    if (op == 0x5c) return *pop = 2, *push = 4, true;
    if (op == 0x5d) return *pop = 3, *push = 5, true;
    if (op == 0x5e) return *pop = 4, *push = 6, true;
    if (op == 0x5f) return *pop = 2, *push = 2, true;
    if (op >= 0x60 && op <= 0x73) {
      int c = arith_cat(op - 0x60);
      return *pop = 2 * c, *push = c, true;
    }
    if (op >= 0x74 && op <= 0x77) {
      int c = arith_cat(op - 0x74);
      return *pop = c, *push = c, true;
    }
    if (op >= 0x78 && op <= 0x7d) {
      int c = (op % 2 == 1) ? 2 : 1;  // lshl 0x79, lshr 0x7b, lushr 0x7d
      return *pop = c + 1, *push = c, true;
    }
    if (op >= 0x7e && op <= 0x83) {
      int c = (op % 2 == 1) ? 2 : 1;  // land 0x7f, lor 0x81, lxor 0x83
      return *pop = 2 * c, *push = c, true;
    }
    if (op >= 0x85 && op <= 0x93) {
      static const int from[] = {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 1, 1, 1};
      static const int to[] = {2, 1, 2, 1, 1, 2, 1, 2, 2, 1, 2, 1, 1, 1, 1};
      return *pop = from[op - 0x85], *push = to[op - 0x85], true;
    }
    if (op == 0x94 || op == 0x97 || op == 0x98) return *pop = 4, *push = 1, true;
    if (op == 0x95 || op == 0x96) return *pop = 2, *push = 1, true;
    if ((op >= 0x99 && op <= 0x9e) || op == 0xc6 || op == 0xc7) return *pop = 1, true;
    if (op >= 0x9f && op <= 0xa6) return *pop = 2, true;
    if (op == 0xaa || op == 0xab) return *pop = 1, true;
    if (op >= 0xac && op <= 0xb0) return *pop = (op == 0xad || op == 0xaf) ? 2 : 1, true;
    if (op >= 0xb2 && op <= 0xb5) {
      std::string owner, name, desc;
      if (!pool_.member(static_cast<std::uint32_t>(in.i1), &owner, &name, &desc)) return false;
      int c = slots_of(desc[0]);
      if (op == 0xb2) *push = c;
      if (op == 0xb3) *pop = c;
      if (op == 0xb4) *pop = 1, *push = c;
      if (op == 0xb5) *pop = 1 + c;
      return true;
    }
    if (op >= 0xb6 && op <= 0xba) {
      std::string owner, name, desc;
      std::vector<int> params;
      int ret = 0;
      if (!pool_.member(static_cast<std::uint32_t>(in.i1), &owner, &name, &desc) || !parse_method_desc(desc, &params, &ret)) return false;
      int n = 0;
      for (int p : params) n += p;
      *pop = n + ((op == 0xb8 || op == 0xba) ? 0 : 1);
      *push = ret;
      return true;
    }
    if (op == 0xbb) return *push = 1, true;
    if (op == 0xbc || op == 0xbd || op == 0xbe || op == 0xc1) return *pop = 1, *push = 1, true;
    if (op == 0xbf || op == 0xc2 || op == 0xc3) return *pop = 1, true;
    if (op == 0xc5) return *pop = static_cast<int>(in.i2), *push = 1, true;
    return false;
  }

  bool in_try(std::uint32_t off) const {
    for (const auto& h : handlers_) {
      if (off >= h[0] && off < h[1]) return true;
    }
    return false;
  }

  std::vector<std::uint32_t> succ_offsets(const Insn& in) const {
    std::vector<std::uint32_t> out;
    std::uint8_t op = in.op;
    bool ends = (op >= 0xac && op <= 0xb1) || op == 0xbf || op == 0xa7 || op == 0xc8 || op == 0xaa || op == 0xab;
    if (!ends) out.push_back(in.off + in.len);
    if ((op >= 0x99 && op <= 0xa7) || op == 0xc6 || op == 0xc7 || op == 0xc8) out.push_back(static_cast<std::uint32_t>(in.i1));
    for (std::int64_t t : in.targets) out.push_back(static_cast<std::uint32_t>(t));
    return out;
  }

  std::string heights() {
    height_.assign(insns_.size(), -1);
    std::vector<std::uint32_t> work;
    auto reach = [&](std::uint32_t off, int h) -> std::string {
      auto it = index_.find(off);
      if (it == index_.end()) return fmt::format("jump to {} is not an instruction", off);
      int& cur = height_[it->second];
      if (cur == -1) {
        cur = h;
        work.push_back(it->second);
      } else if (cur != h) {
        return fmt::format("stack heights {} and {} meet at {}", cur, h, off);
      }
      return {};
    };
    if (insns_.empty()) return "empty code";
    if (std::string e = reach(0, 0); !e.empty()) return e;
    for (const auto& h : handlers_) {
      if (std::string e = reach(h[2], 1); !e.empty()) return e;
    }
    while (!work.empty()) {
      const Insn& in = insns_[work.back()];
      int h = height_[work.back()];
      work.pop_back();
      int pop = 0, push = 0;
      if (!effect(in, &pop, &push)) return fmt::format("bad constant pool reference at {}", in.off);
      int nh = h - pop + push;
      if (h - pop < 0 || nh > static_cast<int>(S_)) return fmt::format("stack under/overflow at {}", in.off);
      for (std::uint32_t s : succ_offsets(in)) {
        if (s >= code_.size()) return fmt::format("control falls off the code at {}", in.off);
        if (std::string e = reach(s, nh); !e.empty()) return e;
      }
    }
    return {};
  }

  void ensure_type(const std::string& name, const std::string& field, char desc0) {
    Type* t = nullptr;
    for (Type& ty : m_->types) {
      if (ty.name == name) t = &ty;
    }
    if (t == nullptr) {
      m_->types.push_back(Type{name, {}});
      t = &m_->types.back();
    }
    if (!field.empty() && t->find_field(field) == nullptr) {
      t->fields.push_back(Field{field, (desc0 == 'L' || desc0 == '[') ? "ref" : "int"});
    }
  }

  Instr mk(Opcode op, Reg dst, RegList args) {
    Instr in;
    in.op = op;
    in.dst = dst;
    in.args = std::move(args);
    if (is_access(op)) in.site = next_site_++;
    if (op == Opcode::kNewArray) in.type = "ref";
    return in;
  }

  std::string emit(Function* f) {
    // Leaders: entry, targets, after control transfers, handler starts, and in try ranges
    // after every instruction.
    std::set<std::uint32_t> leaders{0};
    for (const auto& h : handlers_) leaders.insert(h[2]);
    for (const Insn& in : insns_) {
      auto succ = succ_offsets(in);
      bool falls = !succ.empty() && succ[0] == in.off + in.len;
      if (succ.size() != 1 || !falls || in_try(in.off)) {
        for (std::uint32_t s : succ) leaders.insert(s);
        if (in.off + in.len < code_.size()) leaders.insert(in.off + in.len);
      }
    }
    std::map<std::uint32_t, BlockId> block_of;
    f->blocks.push_back(Block{"entry", {}});  // a fresh entry (bytecode may jump to offset 0)
    for (std::uint32_t off : leaders) {
      block_of[off] = static_cast<BlockId>(f->blocks.size());
      f->blocks.push_back(Block{fmt::format("L{}", off), {}});
    }
    Instr go = mk(Opcode::kGoto, kNoReg, {});
    go.targets = {block_of[0]};
    f->blocks[0].instrs.push_back(go);
    BlockId exit_block = kNoBlock;
    auto exit = [&] {
      if (exit_block == kNoBlock) {
        exit_block = static_cast<BlockId>(f->blocks.size());
        f->blocks.push_back(Block{"Lexit", {mk(Opcode::kReturn, kNoReg, {})}});
      }
      return exit_block;
    };
    for (auto it = block_of.begin(); it != block_of.end(); ++it) {
      auto next = std::next(it);
      std::uint32_t end = next == block_of.end() ? static_cast<std::uint32_t>(code_.size()) : next->first;
      std::vector<Instr> out;
      bool returns = false;
      std::uint32_t last_off = it->first;
      bool reached = true;
      Reg cond = kNoReg;
      Opcode term = Opcode::kGoto;
      alias_.assign(S_ + 2, -1);
      for (std::uint32_t off = it->first; off < end;) {
        auto ii = index_.find(off);
        if (ii == index_.end()) return "bad instruction boundary";
        const Insn& in = insns_[ii->second];
        int h = height_[ii->second];
        last_off = off;
        if (h < 0) {
          reached = false;
          break;
        }
        if (std::string e = translate(in, h, &out, &cond, &term, &returns); !e.empty()) return e;
        if (bad_) return fmt::format("register out of range at {}", in.off);
        off += in.len;
      }
      Block& blk = f->blocks[it->second];
      blk.instrs = std::move(out);
      if (!reached) {
        blk.instrs.clear();
        blk.instrs.push_back(mk(Opcode::kReturn, kNoReg, {}));
        continue;
      }
      std::vector<BlockId> handlers;
      if (in_try(last_off)) {
        for (const auto& h : handlers_) {
          if (last_off >= h[0] && last_off < h[1]) handlers.push_back(block_of[h[2]]);
        }
      }
      // Keep only the successors of the block's last instruction (earlier ones fell through).
      std::vector<BlockId> last_succ;
      {
        const Insn& in = insns_[index_[last_off]];
        for (std::uint32_t s : succ_offsets(in)) {
          auto bi = block_of.find(s);
          if (bi == block_of.end()) return "jump into the middle of a block";
          last_succ.push_back(bi->second);
        }
      }
      if (handlers.empty()) {
        if (returns) {
          // `ret` already emitted by translate().
        } else if (last_succ.empty()) {
          blk.instrs.push_back(mk(Opcode::kReturn, kNoReg, {}));
        } else if (term == Opcode::kBranch && last_succ.size() == 2) {
          Instr t = mk(Opcode::kBranch, kNoReg, {cond});
          t.targets = {last_succ[1], last_succ[0]};
          blk.instrs.push_back(t);
        } else if (last_succ.size() == 1) {
          Instr t = mk(Opcode::kGoto, kNoReg, {});
          t.targets = last_succ;
          blk.instrs.push_back(t);
        } else {
          Instr t = mk(Opcode::kSwitch, kNoReg, {cond == kNoReg ? scratch() : cond});
          t.targets = last_succ;
          blk.instrs.push_back(t);
        }
      } else {
        // Normal successors (or the exit) plus every handler covering the last instruction.
        if (returns) blk.instrs.pop_back();
        Instr t = mk(Opcode::kSwitch, kNoReg, {cond == kNoReg ? scratch() : cond});
        t.targets = last_succ;
        if (last_succ.empty()) t.targets.push_back(exit());  // may grow f->blocks: no `blk` below
        for (BlockId hb : handlers) t.targets.push_back(hb);
        f->blocks[it->second].instrs.push_back(t);
      }
    }
    // Handler blocks start by receiving the exception object in stack slot 0. This is a GC
    // point: an exception the VM throws itself (a null dereference, a failed cast, an index out
    // of bounds, in this method or in a callee) is allocated on the way to the handler.
    for (const auto& h : handlers_) {
      auto& ins = f->blocks[block_of[h[2]]].instrs;
      if (!ins.empty() && ins.front().op == Opcode::kCallStatic && ins.front().name == "jvm.caught") continue;
      Instr c = mk(Opcode::kCallStatic, st(0), {});
      c.name = "jvm.caught";
      ins.insert(ins.begin(), c);
    }
    f->num_regs = L_ + S_ + 3;
    return bad_ ? std::string("register out of range") : std::string();
  }

  // A stack slot loaded from a local (and not since overwritten, nor the local stored) is read
  // through the local itself, as a register-based compiler (dx) would emit it; otherwise every
  // access would go through a fresh stack register and defeat register-based elimination.
  Reg rd(std::int64_t s) {
    if (s >= 0 && static_cast<std::size_t>(s) < alias_.size() && alias_[static_cast<std::size_t>(s)] >= 0) {
      return local(alias_[static_cast<std::size_t>(s)]);
    }
    return st(s);
  }

  std::string translate(const Insn& in, int h, std::vector<Instr>* out, Reg* cond, Opcode* term, bool* returns) {
    std::string e = translate_op(in, h, out, cond, term, returns);
    if (!e.empty()) return e;
    int pop = 0, push = 0;
    effect(in, &pop, &push);
    const std::uint8_t op = in.op;
    const int base = h - pop;
    const int dup_src = op == 0x59 && h >= 1 ? alias_[static_cast<std::size_t>(h - 1)] : -1;
    for (std::size_t k = static_cast<std::size_t>(std::max(base, 0)); k < alias_.size(); ++k) alias_[k] = -1;
    int stored = -1;
    if ((op >= 0x36 && op <= 0x3a) || op == 0x84) stored = static_cast<int>(in.i1);
    if (op >= 0x3b && op <= 0x4e) stored = (op - 0x3b) % 4;
    if (stored >= 0) {
      for (int& a : alias_) a = a == stored ? -1 : a;
    }
    if (op >= 0x15 && op <= 0x19) alias_[static_cast<std::size_t>(h)] = static_cast<int>(in.i1);
    if (op >= 0x1a && op <= 0x2d) alias_[static_cast<std::size_t>(h)] = (op - 0x1a) % 4;
    if (op == 0x59 && h >= 1) alias_[static_cast<std::size_t>(h - 1)] = alias_[static_cast<std::size_t>(h)] = dup_src;
    return {};
  }

  std::string translate_op(const Insn& in, int h, std::vector<Instr>* out, Reg* cond, Opcode* term, bool* returns) {
    std::uint8_t op = in.op;
    auto emit = [&](Instr i) { out->push_back(std::move(i)); };
    auto konst = [&](Reg d) { emit(mk(Opcode::kConst, d, {})); };
    auto move = [&](Reg d, Reg s) { emit(mk(Opcode::kMove, d, {s})); };
    auto member = [&](std::string* owner, std::string* name, std::string* desc) {
      return pool_.member(static_cast<std::uint32_t>(in.i1), owner, name, desc);
    };
    int pop = 0, push = 0;
    effect(in, &pop, &push);
    const int base = h - pop;  // first popped slot
    *term = Opcode::kGoto;
    if (op == 0x00 || op == 0xa7 || op == 0xc8 || op == 0xc0 || op == 0x57 || op == 0x58 || op == 0xb3) return {};
    if (op == 0x01) return emit(mk(Opcode::kNull, st(h), {})), std::string();
    if ((op >= 0x02 && op <= 0x11) || op == 0x14 || op == 0x12 || op == 0x13) {
      const CpEntry* c = (op >= 0x12 && op <= 0x14) ? pool_.at(static_cast<std::uint32_t>(in.i1)) : nullptr;
      if (c != nullptr && (c->tag == 7 || c->tag == 8 || c->tag == 15 || c->tag == 16 || c->tag == 17)) {
        Instr i = mk(Opcode::kCallStatic, st(h), {});
        i.may_gc = false;
        i.name = "jvm.ldc";
        emit(i);
      } else {
        konst(st(h));
      }
      return {};
    }
    if (op >= 0x15 && op <= 0x19) return move(st(h), local(in.i1)), std::string();
    if (op >= 0x1a && op <= 0x2d) return move(st(h), local((op - 0x1a) % 4)), std::string();
    if (op >= 0x2e && op <= 0x35) return emit(mk(Opcode::kArrayGet, st(base), {rd(base), rd(base + 1)})), std::string();
    if (op >= 0x36 && op <= 0x3a) return move(local(in.i1), rd(base)), std::string();
    if (op >= 0x3b && op <= 0x4e) return move(local((op - 0x3b) % 4), rd(base)), std::string();
    if (op >= 0x4f && op <= 0x56) return emit(mk(Opcode::kArrayPut, kNoReg, {rd(base), rd(base + 1), rd(base + 2)})), std::string();
    if (op == 0x59) return move(st(h), rd(h - 1)), std::string();
    if (op == 0x5a) {
      move(st(h), st(h - 1));
      move(st(h - 1), st(h - 2));
      move(st(h - 2), st(h));
      return {};
    }
    if (op == 0x5b) {
      move(st(h), st(h - 1));
      move(st(h - 1), st(h - 2));
      move(st(h - 2), st(h - 3));
      move(st(h - 3), st(h));
      return {};
    }
    if (op == 0x5c) {
      move(st(h), st(h - 2));
      move(st(h + 1), st(h - 1));
      return {};
    }
    if (op == 0x5d) {
      move(st(h + 1), st(h - 1));
      move(st(h), st(h - 2));
      move(st(h - 1), st(h - 3));
      move(st(h - 2), st(h + 1));
      move(st(h - 3), st(h));
      return {};
    }
    if (op == 0x5e) {
      move(st(h + 1), st(h - 1));
      move(st(h), st(h - 2));
      move(st(h - 1), st(h - 3));
      move(st(h - 2), st(h - 4));
      move(st(h - 3), st(h + 1));
      move(st(h - 4), st(h));
      return {};
    }
    if (op == 0x5f) {
      move(scratch(), st(h - 1));
      move(st(h - 1), st(h - 2));
      move(st(h - 2), scratch());
      return {};
    }
    if ((op >= 0x60 && op <= 0x73) || (op >= 0x78 && op <= 0x83) || (op >= 0x94 && op <= 0x98)) {
      Instr i = mk(op >= 0x94 ? Opcode::kCompare : Opcode::kBinary, st(base), {rd(base), rd(h - 1)});
      emit(i);
      return {};
    }
    if ((op >= 0x74 && op <= 0x77) || (op >= 0x85 && op <= 0x93) || op == 0xc1) return konst(st(base)), std::string();
    if (op == 0x84) return emit(mk(Opcode::kBinary, local(in.i1), {local(in.i1), local(in.i1)})), std::string();
    if ((op >= 0x99 && op <= 0xa4) || op == 0xc6 || op == 0xc7) {
      *cond = rd(base);
      *term = Opcode::kBranch;
      return {};
    }
    if (op == 0xa5 || op == 0xa6) {
      emit(mk(Opcode::kRefEqual, scratch(), {rd(base), rd(base + 1)}));
      *cond = scratch();
      *term = Opcode::kBranch;
      return {};
    }
    if (op == 0xaa || op == 0xab) {
      *cond = rd(base);
      *term = Opcode::kSwitch;
      return {};
    }
    if (op >= 0xac && op <= 0xb1) {
      *returns = true;
      emit(mk(Opcode::kReturn, kNoReg, op == 0xb1 ? RegList{} : RegList{rd(base)}));
      return {};
    }
    if (op == 0xbf) {
      *returns = true;
      emit(mk(Opcode::kReturn, kNoReg, {rd(base)}));
      return {};
    }
    if (op >= 0xb2 && op <= 0xb5) {
      std::string owner, name, desc;
      if (!member(&owner, &name, &desc)) return "bad field reference";
      if (op == 0xb2) {
        // "jvm." names the importer's own markers; they are never method calls.
        Instr i = mk(Opcode::kCallStatic, st(h), {});
        i.may_gc = false;
        i.name = "jvm.getstatic";
        emit(i);
        return {};
      }
      ensure_type(owner, name, desc[0]);
      Instr i = mk(op == 0xb4 ? Opcode::kGetField : Opcode::kPutField, op == 0xb4 ? st(base) : kNoReg,
                   op == 0xb4 ? RegList{rd(base)} : RegList{rd(base), rd(base + 1)});
      i.type = owner;
      i.name = name;
      emit(i);
      return {};
    }
    if (op >= 0xb6 && op <= 0xba) {
      std::string owner, name, desc;
      std::vector<int> params;
      int ret = 0;
      if (!member(&owner, &name, &desc) || !parse_method_desc(desc, &params, &ret)) return "bad method reference";
      bool has_recv = op != 0xb8 && op != 0xba;
      RegList args;
      int slot = base;
      if (has_recv) args.push_back(rd(slot++));
      for (int p : params) {
        args.push_back(rd(slot));
        slot += p;
      }
      if (args.size() > kMaxInvokeArgs) return "too many call arguments";
      Instr i = mk(has_recv ? Opcode::kInvoke : Opcode::kCallStatic, ret > 0 ? st(base) : kNoReg, std::move(args));
      i.name = fmt::format("{}.{}", owner, name);
      i.type = desc;  // moved to ClassImport::call_descriptors once the method is complete
      emit(i);
      return {};
    }
    if (op == 0xbb) {
      std::string cls = pool_.class_name(static_cast<std::uint32_t>(in.i1));
      if (cls.empty()) return "bad class reference";
      ensure_type(cls, {}, 'V');
      Instr i = mk(Opcode::kNew, st(h), {});
      i.type = cls;
      emit(i);
      return {};
    }
    if (op == 0xbc || op == 0xbd || op == 0xc5) return emit(mk(Opcode::kNewArray, st(base), {rd(base)})), std::string();
    if (op == 0xbe) return emit(mk(Opcode::kArrayLength, st(base), {rd(base)})), std::string();
    if (op == 0xc2 || op == 0xc3) {
      return emit(mk(op == 0xc2 ? Opcode::kMonitorEnter : Opcode::kMonitorExit, kNoReg, {rd(base)})), std::string();
    }
    return fmt::format("unsupported opcode 0x{:02x}", op);
  }

  const Pool& pool_;
  Module* m_;
  std::string_view code_;
  std::uint32_t S_, L_;
  std::vector<std::array<std::uint32_t, 3>> handlers_;  // start, end, handler
  std::vector<Insn> insns_;
  std::unordered_map<std::uint32_t, std::uint32_t> index_;  // offset -> insn
  std::vector<int> height_;
  SiteId next_site_ = 0;
  bool bad_ = false;
  std::vector<int> alias_;  // per stack slot: the local it was loaded from, or -1
};

Error corrupt(std::string what) { return make_error(ErrorCode::kCorrupt, "class file: " + what); }

}  // namespace

Result<ClassImport> import_class(std::string_view bytes) {
  Reader r(bytes);
  if (r.u4() != 0xCAFEBABE) return corrupt("bad magic (not a .class file)");
  r.u2();
  r.u2();
  Pool pool;
  std::uint32_t n = r.u2();
  if (n == 0) return corrupt("empty constant pool");
  pool.e.resize(n);
  for (std::uint32_t i = 1; i < n && r.ok(); ++i) {
    CpEntry& e = pool.e[i];
    e.tag = static_cast<std::uint8_t>(r.u1());
    switch (e.tag) {
      case 1: {
        std::uint32_t len = r.u2();
        e.utf8 = std::string(r.bytes(len));
        break;
      }
      case 3: case 4: e.a = r.u4(); break;
      case 5: case 6: e.a = r.u4(); e.b = r.u4(); ++i; break;
      case 7: case 8: case 16: case 19: case 20: e.a = r.u2(); break;
      case 9: case 10: case 11: case 12: case 17: case 18: e.a = r.u2(); e.b = r.u2(); break;
      case 15: e.a = r.u1(); e.b = r.u2(); break;
      default: return corrupt(fmt::format("unknown constant pool tag {} at entry {}", e.tag, i));
    }
  }
  const std::uint32_t class_access = r.u2();
  std::string this_class = pool.class_name(r.u2());
  std::string super_class = pool.class_name(r.u2());
  std::vector<std::string> interfaces;
  std::uint32_t ifaces = r.u2();
  for (std::uint32_t i = 0; i < ifaces && r.ok(); ++i) interfaces.push_back(pool.class_name(r.u2()));
  auto skip_attrs = [&] {
    std::uint32_t na = r.u2();
    for (std::uint32_t a = 0; a < na && r.ok(); ++a) {
      r.u2();
      r.bytes(r.u4());
    }
  };
  std::uint32_t fields = r.u2();
  for (std::uint32_t i = 0; i < fields && r.ok(); ++i) {
    r.u2();
    r.u2();
    r.u2();
    skip_attrs();
  }
  if (!r.ok() || this_class.empty()) return corrupt("truncated header");
  ClassImport out;
  out.info.name = this_class;
  out.info.super = super_class;
  out.info.interfaces = std::move(interfaces);
  out.info.access = static_cast<std::uint16_t>(class_access);
  std::uint32_t methods = r.u2();
  for (std::uint32_t i = 0; i < methods && r.ok(); ++i) {
    const std::uint32_t method_access = r.u2();
    const bool is_static = (method_access & 0x0008) != 0;
    std::string name = ir_name(pool.utf8(r.u2()));
    std::string desc = pool.utf8(r.u2());
    JvmMethod& info = out.info.methods.emplace_back();
    info.name = name;
    info.descriptor = desc;
    info.access = static_cast<std::uint16_t>(method_access);
    std::uint32_t na = r.u2();
    std::string skip;
    bool has_code = false;
    Function f;
    for (std::uint32_t a = 0; a < na && r.ok(); ++a) {
      std::string aname = pool.utf8(r.u2());
      std::string_view body = r.bytes(r.u4());
      if (aname != "Code" || !r.ok()) continue;
      has_code = true;
      Reader c(body);
      std::uint32_t max_stack = c.u2(), max_locals = c.u2();
      std::string_view code = c.bytes(c.u4());
      std::vector<std::array<std::uint32_t, 3>> handlers;
      std::uint32_t nh = c.u2();
      for (std::uint32_t k = 0; k < nh && c.ok(); ++k) {
        std::uint32_t s = c.u2(), e = c.u2(), h = c.u2();
        c.u2();
        handlers.push_back({s, e, h});
      }
      if (!c.ok()) {
        skip = "truncated Code attribute";
        continue;
      }
      if (static_cast<std::uint64_t>(max_locals) + max_stack + 3 > kMaxRegs) {
        skip = "too many registers";
        continue;
      }
      MethodTranslator t(pool, &out.module, code, max_stack, max_locals, std::move(handlers));
      skip = t.run(&f);
    }
    if (!has_code) continue;  // abstract or native
    std::string label = fmt::format("{}.{}{}", this_class, name, desc);
    if (!skip.empty()) {
      out.skipped.push_back(fmt::format("{}: {}", label, skip));
      continue;
    }
    {
      std::vector<int> params;
      int ret = 0;
      Reg slot = 0;
      if (!is_static) {
        f.params.push_back(slot++);
        f.has_receiver = true;
      }
      if (parse_method_desc(desc, &params, &ret)) {
        for (int p : params) {
          if (slot < f.num_regs) f.params.push_back(slot);
          slot += static_cast<Reg>(p);
        }
      }
    }
    f.name = fmt::format("{}.{}", this_class, name);
    int dup = 1;
    for (;;) {
      bool clash = false;
      for (const Function& g : out.module.functions) clash |= g.name == f.name;
      if (!clash) break;
      f.name = fmt::format("{}.{}-{}", this_class, name, ++dup);
    }
    // Calls keep their descriptor beside the IR (which names a call by owner and method only).
    std::vector<CallDescriptor> descriptors;
    for (BlockId b = 0; b < f.blocks.size(); ++b) {
      for (std::uint32_t k = 0; k < f.blocks[b].instrs.size(); ++k) {
        Instr& in = f.blocks[b].instrs[k];
        if ((in.op != Opcode::kInvoke && in.op != Opcode::kCallStatic) || in.type.empty()) continue;
        descriptors.push_back({b, k, std::move(in.type)});
        in.type.clear();
      }
    }
    info.function = static_cast<std::int32_t>(out.module.functions.size());
    out.module.functions.push_back(std::move(f));
    out.call_descriptors.push_back(std::move(descriptors));
  }
  if (!r.ok()) return corrupt("truncated methods");
  return out;
}

}  // namespace objprof::ir
