// Parser and printer of the IR text format (docs/ir-format.md). The parser is a hand-written
// line-oriented recursive descent over a small lexer; every failure becomes a kParse Error
// naming file, line, column and what was expected, so bad input never crashes.
#include "objprof/ir/text.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <iterator>
#include <optional>
#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace objprof::ir {
namespace {

enum class Tok { kIdent, kInt, kPunct, kNewline, kEnd };

struct Token {
  Tok kind = Tok::kEnd;
  std::string_view text;
  int line = 1;
  int col = 1;
};

bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' || c == '<';
}
bool is_ident_char(char c) {
  return is_ident_start(c) || (c >= '0' && c <= '9') || c == '.' || c == '/' || c == '>' || c == '-';
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }

class Lexer {
 public:
  explicit Lexer(std::string_view text) : text_(text) {}

  Token next() {
    // Skip blanks and comments (a comment runs from ';' to the end of the line).
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\r') {
        advance();
      } else if (c == ';') {
        while (pos_ < text_.size() && text_[pos_] != '\n') advance();
      } else {
        break;
      }
    }
    Token t;
    t.line = line_;
    t.col = col_;
    if (pos_ >= text_.size()) {
      t.kind = Tok::kEnd;
      return t;
    }
    std::size_t start = pos_;
    char c = text_[pos_];
    if (c == '\n') {
      advance();
      t.kind = Tok::kNewline;
      t.text = text_.substr(start, 1);
      return t;
    }
    if (is_digit(c) || (c == '-' && pos_ + 1 < text_.size() && is_digit(text_[pos_ + 1]))) {
      advance();
      while (pos_ < text_.size() && is_digit(text_[pos_])) advance();
      t.kind = Tok::kInt;
      t.text = text_.substr(start, pos_ - start);
      return t;
    }
    if (is_ident_start(c)) {
      while (pos_ < text_.size() && is_ident_char(text_[pos_])) advance();
      t.kind = Tok::kIdent;
      t.text = text_.substr(start, pos_ - start);
      return t;
    }
    advance();
    t.kind = Tok::kPunct;
    t.text = text_.substr(start, 1);
    return t;
  }

 private:
  void advance() {
    if (text_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++pos_;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
  int line_ = 1;
  int col_ = 1;
};

std::string describe(const Token& t) {
  switch (t.kind) {
    case Tok::kEnd: return "end of input";
    case Tok::kNewline: return "end of line";
    case Tok::kInt: return fmt::format("number '{}'", t.text);
    case Tok::kIdent: return fmt::format("'{}'", t.text);
    case Tok::kPunct: {
      unsigned char c = static_cast<unsigned char>(t.text[0]);
      if (c < 0x20 || c >= 0x7f) return fmt::format("byte 0x{:02x}", c);
      return fmt::format("'{}'", t.text);
    }
  }
  return "?";
}

// Register names are "v" followed by decimal digits.
bool parse_reg_name(std::string_view s, std::uint64_t* out) {
  if (s.size() < 2 || s[0] != 'v' || s.size() > 12) return false;
  std::uint64_t v = 0;
  for (std::size_t i = 1; i < s.size(); ++i) {
    if (!is_digit(s[i])) return false;
    v = v * 10 + static_cast<std::uint64_t>(s[i] - '0');
  }
  *out = v;
  return true;
}

struct PendingTarget {
  BlockId block;
  std::size_t instr;
  std::size_t slot;
  Token label;
};

struct PendingField {
  Token at;
  std::string type;
  std::string field;
};

class Parser {
 public:
  Parser(std::string_view text, std::string_view filename) : lex_(text), filename_(filename) { tok_ = lex_.next(); }

  Result<Module> run() {
    Module m;
    for (;;) {
      skip_newlines();
      if (tok_.kind == Tok::kEnd) break;
      if (is_ident("type")) {
        if (!parse_type(&m)) return take_error();
      } else if (is_ident("func")) {
        if (!parse_function(&m)) return take_error();
      } else {
        fail("'type' or 'func'");
        return take_error();
      }
    }
    // Types may be declared after their use; check field references once all are known.
    for (const PendingField& pf : fields_) {
      const Type* type = m.find_type(pf.type);
      if (type == nullptr) {
        fail_at(pf.at, fmt::format("a declared type, found unknown type '{}'", pf.type), false);
        return take_error();
      }
      if (pf.field.empty()) continue;
      if (type->find_field(pf.field) == nullptr) {
        fail_at(pf.at, fmt::format("a field of type '{}', found unknown field '{}'", pf.type, pf.field), false);
        return take_error();
      }
    }
    return m;
  }

 private:
  // --- token helpers ---
  void bump() { tok_ = lex_.next(); }
  bool is_ident(std::string_view s) const { return tok_.kind == Tok::kIdent && tok_.text == s; }
  bool is_punct(char c) const { return tok_.kind == Tok::kPunct && tok_.text[0] == c; }
  void skip_newlines() {
    while (tok_.kind == Tok::kNewline) bump();
  }

  bool fail(std::string_view expected) {
    fail_at(tok_, std::string(expected), true);
    return false;
  }
  void fail_at(const Token& at, std::string expected, bool add_found) {
    if (error_set_) return;
    error_set_ = true;
    if (add_found) {
      error_ = fmt::format("{}:{}:{}: expected {}, found {}", filename_, at.line, at.col, expected, describe(at));
    } else {
      error_ = fmt::format("{}:{}:{}: expected {}", filename_, at.line, at.col, expected);
    }
  }
  Error take_error() { return make_error(ErrorCode::kParse, error_); }

  bool expect_punct(char c) {
    if (!is_punct(c)) return fail(fmt::format("'{}'", c));
    bump();
    return true;
  }
  bool expect_ident(std::string_view what, std::string* out) {
    if (tok_.kind != Tok::kIdent) return fail(what);
    *out = std::string(tok_.text);
    bump();
    return true;
  }
  bool expect_end_of_line() {
    if (tok_.kind == Tok::kNewline) {
      bump();
      return true;
    }
    if (tok_.kind == Tok::kEnd || is_punct('}')) return true;
    return fail("end of line");
  }
  bool parse_int(std::int64_t* out) {
    if (tok_.kind != Tok::kInt) return fail("an integer");
    std::int64_t v = 0;
    auto [p, ec] = std::from_chars(tok_.text.data(), tok_.text.data() + tok_.text.size(), v);
    if (ec != std::errc() || p != tok_.text.data() + tok_.text.size()) {
      fail_at(tok_, fmt::format("an integer in 64-bit range, found '{}'", tok_.text), false);
      return false;
    }
    *out = v;
    bump();
    return true;
  }

  // A register operand "vN"; N must be below the declared register count (if any).
  bool parse_reg(Reg* out) {
    std::uint64_t v = 0;
    if (tok_.kind != Tok::kIdent || !parse_reg_name(tok_.text, &v)) return fail("a register (vN)");
    if (v >= kMaxRegs) {
      fail_at(tok_, fmt::format("a register below v{}, found '{}'", kMaxRegs, tok_.text), false);
      return false;
    }
    if (declared_regs_ && v >= *declared_regs_) {
      fail_at(tok_, fmt::format("a register below v{} (the function declares regs {}), found '{}'", *declared_regs_,
                                *declared_regs_, tok_.text),
              false);
      return false;
    }
    max_reg_ = std::max<std::int64_t>(max_reg_, static_cast<std::int64_t>(v));
    *out = static_cast<Reg>(v);
    bump();
    return true;
  }

  bool parse_comma_reg(Reg* out) { return expect_punct(',') && parse_reg(out); }

  // --- type Name { field: kind, ... } ---
  bool parse_type(Module* m) {
    bump();  // 'type'
    Type t;
    Token name_tok = tok_;
    if (!expect_ident("a type name", &t.name)) return false;
    if (m->find_type(t.name) != nullptr) {
      fail_at(name_tok, fmt::format("a new type name, found duplicate type '{}'", t.name), false);
      return false;
    }
    skip_newlines();
    if (!expect_punct('{')) return false;
    skip_newlines();
    while (!is_punct('}')) {
      Field f;
      Token ftok = tok_;
      if (!expect_ident("a field name or '}'", &f.name)) return false;
      if (t.find_field(f.name) != nullptr) {
        fail_at(ftok, fmt::format("a new field name, found duplicate field '{}'", f.name), false);
        return false;
      }
      if (!expect_punct(':')) return false;
      if (!expect_ident("a field kind (ref, int, long, ...)", &f.kind)) return false;
      t.fields.push_back(std::move(f));
      skip_newlines();
      if (is_punct(',')) {
        bump();
        skip_newlines();
      } else if (!is_punct('}')) {
        return fail("',' or '}'");
      }
    }
    bump();  // '}'
    m->types.push_back(std::move(t));
    return expect_end_of_line();
  }

  // --- func name(v0, v1) [regs N] { blocks } ---
  bool parse_function(Module* m) {
    bump();  // 'func'
    Function f;
    Token name_tok = tok_;
    if (!expect_ident("a function name", &f.name)) return false;
    for (const Function& other : m->functions) {
      if (other.name == f.name) {
        fail_at(name_tok, fmt::format("a new function name, found duplicate function '{}'", f.name), false);
        return false;
      }
    }
    declared_regs_.reset();
    max_reg_ = -1;
    // Parameters are parsed before `regs` is known; check them afterwards.
    if (!expect_punct('(')) return false;
    std::vector<Token> param_toks;
    if (is_ident("this")) {  // the first parameter is the receiver
      bump();
      f.has_receiver = true;
      if (is_punct(')')) {
        fail_at(tok_, "a receiver register after 'this'", false);
        return false;
      }
    }
    if (!is_punct(')')) {
      for (;;) {
        param_toks.push_back(tok_);
        Reg r = 0;
        if (!parse_reg(&r)) return false;
        for (Reg p : f.params) {
          if (p == r) {
            fail_at(param_toks.back(), fmt::format("distinct parameter registers, found '{}' twice", param_toks.back().text),
                    false);
            return false;
          }
        }
        f.params.push_back(r);
        if (is_punct(',')) {
          bump();
          continue;
        }
        break;
      }
    }
    if (!expect_punct(')')) return false;
    if (is_ident("regs")) {
      bump();
      std::int64_t n = 0;
      Token ntok = tok_;
      if (!parse_int(&n)) return false;
      if (n < 0 || n > static_cast<std::int64_t>(kMaxRegs)) {
        fail_at(ntok, fmt::format("a register count in 0..{}, found {}", kMaxRegs, n), false);
        return false;
      }
      if (n <= max_reg_) {
        fail_at(ntok, fmt::format("a register count above every parameter register, found {}", n), false);
        return false;
      }
      declared_regs_ = static_cast<std::uint32_t>(n);
    }
    skip_newlines();
    if (!expect_punct('{')) return false;
    if (!expect_end_of_line()) return false;

    std::unordered_map<std::string, BlockId> labels;
    std::vector<PendingTarget> targets;
    std::unordered_set<SiteId> sites;
    std::vector<std::pair<BlockId, std::size_t>> unsited;
    bool block_open = false;  // the current block has not seen its terminator yet
    for (;;) {
      skip_newlines();
      if (is_punct('}')) {
        if (block_open) return fail(fmt::format("a terminator (goto, br, switch, ret) ending block '{}'", f.blocks.back().name));
        if (f.blocks.empty()) return fail("a block label");
        bump();
        break;
      }
      if (tok_.kind == Tok::kEnd) return fail("'}' closing function");
      // A label is an identifier directly followed by ':'.
      if (tok_.kind == Tok::kIdent) {
        Token save = tok_;
        Lexer save_lex = lex_;
        bump();
        if (is_punct(':')) {
          if (block_open) {
            fail_at(save, fmt::format("a terminator (goto, br, switch, ret) ending block '{}'", f.blocks.back().name), false);
            return false;
          }
          std::string label(save.text);
          if (labels.count(label) != 0) {
            fail_at(save, fmt::format("a new block label, found duplicate label '{}'", label), false);
            return false;
          }
          labels.emplace(label, static_cast<BlockId>(f.blocks.size()));
          f.blocks.push_back(Block{label, {}});
          block_open = true;
          bump();  // ':'
          if (!expect_end_of_line()) return false;
          continue;
        }
        tok_ = save;
        lex_ = save_lex;
      }
      if (!block_open) {
        if (f.blocks.empty()) return fail("a block label (name:)");
        return fail("a block label after a terminator");
      }
      Instr instr;
      Token site_tok;
      if (!parse_instr(&instr, &site_tok)) return false;
      BlockId b = static_cast<BlockId>(f.blocks.size() - 1);
      std::size_t idx = f.blocks.back().instrs.size();
      for (std::size_t s = 0; s < pending_labels_.size(); ++s) targets.push_back({b, idx, s, pending_labels_[s]});
      if (is_access(instr.op)) {
        if (instr.site == kNoSite) {
          unsited.emplace_back(b, idx);
        } else if (!sites.insert(instr.site).second) {
          fail_at(site_tok, fmt::format("a site id unique in the function, found duplicate #{}", instr.site), false);
          return false;
        }
      }
      if (is_terminator(instr.op)) block_open = false;
      f.blocks.back().instrs.push_back(std::move(instr));
      if (!expect_end_of_line()) return false;
    }
    for (const PendingTarget& pt : targets) {
      auto it = labels.find(std::string(pt.label.text));
      if (it == labels.end()) {
        fail_at(pt.label, fmt::format("a block label of this function, found unknown label '{}'", pt.label.text), false);
        return false;
      }
      f.blocks[pt.block].instrs[pt.instr].targets[pt.slot] = it->second;
    }
    // Access instructions written without '#N' get fresh ids above every written one.
    SiteId next = 0;
    for (SiteId s : sites) next = std::max<SiteId>(next, s + 1);
    for (auto [b, i] : unsited) f.blocks[b].instrs[i].site = next++;
    f.num_regs = declared_regs_ ? *declared_regs_ : static_cast<std::uint32_t>(max_reg_ + 1);
    m->functions.push_back(std::move(f));
    return expect_end_of_line();
  }

  bool parse_call_args(Instr* in, bool need_receiver) {
    if (!expect_punct('(')) return false;
    if (!is_punct(')')) {
      for (;;) {
        Reg r = 0;
        if (!parse_reg(&r)) return false;
        in->args.push_back(r);
        if (in->args.size() > kMaxInvokeArgs) return fail(fmt::format("at most {} arguments", kMaxInvokeArgs));
        if (is_punct(',')) {
          bump();
          continue;
        }
        break;
      }
    }
    if (need_receiver && in->args.empty()) return fail("a receiver register");
    return expect_punct(')');
  }

  bool parse_field_ref(Instr* in) {
    Token at = tok_;
    std::string ref;
    if (!expect_ident("a field reference (Type.field)", &ref)) return false;
    auto dot = ref.rfind('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == ref.size()) {
      fail_at(at, fmt::format("a field reference of the form Type.field, found '{}'", ref), false);
      return false;
    }
    in->type = ref.substr(0, dot);
    in->name = ref.substr(dot + 1);
    fields_.push_back({at, in->type, in->name});
    return true;
  }

  bool parse_label(Instr* in) {
    if (tok_.kind != Tok::kIdent) return fail("a block label");
    in->targets.push_back(kNoBlock);
    pending_labels_.push_back(tok_);
    bump();
    return true;
  }

  // [vD =] opcode operands [#site]
  bool parse_instr(Instr* in, Token* site_tok) {
    pending_labels_.clear();
    Reg dst = kNoReg;
    std::uint64_t tmp = 0;
    Token first = tok_;
    if (tok_.kind == Tok::kIdent && parse_reg_name(tok_.text, &tmp)) {
      if (!parse_reg(&dst)) return false;
      if (!expect_punct('=')) return false;
    }
    if (tok_.kind != Tok::kIdent) return fail("an instruction");
    Token op_tok = tok_;
    std::string_view op = tok_.text;
    bump();
    in->dst = dst;
    bool has_dst = dst != kNoReg;
    enum class Dst { kRequired, kOptional, kForbidden } dst_rule = Dst::kRequired;

    auto bin = [&](std::string_view s, BinaryOp* out) {
      for (int i = 0; i <= static_cast<int>(BinaryOp::kShr); ++i) {
        if (binary_op_name(static_cast<BinaryOp>(i)) == s) {
          *out = static_cast<BinaryOp>(i);
          return true;
        }
      }
      return false;
    };
    BinaryOp bop{};
    if (op == "const") {
      in->op = Opcode::kConst;
      if (!parse_int(&in->imm)) return false;
    } else if (op == "null") {
      in->op = Opcode::kNull;
    } else if (op == "move") {
      in->op = Opcode::kMove;
      in->args.resize(1);
      if (!parse_reg(&in->args[0])) return false;
    } else if (bin(op, &bop)) {
      in->op = Opcode::kBinary;
      in->subop = static_cast<std::uint8_t>(bop);
      in->args.resize(2);
      if (!parse_reg(&in->args[0]) || !parse_comma_reg(&in->args[1])) return false;
    } else if (op.substr(0, 4) == "cmp.") {
      in->op = Opcode::kCompare;
      std::string_view cc = op.substr(4);
      bool found = false;
      for (int i = 0; i <= static_cast<int>(CompareOp::kNe); ++i) {
        if (compare_op_name(static_cast<CompareOp>(i)) == cc) {
          in->subop = static_cast<std::uint8_t>(i);
          found = true;
        }
      }
      if (!found) {
        fail_at(op_tok, fmt::format("a comparison cmp.lt|le|gt|ge|eq|ne, found '{}'", op), false);
        return false;
      }
      in->args.resize(2);
      if (!parse_reg(&in->args[0]) || !parse_comma_reg(&in->args[1])) return false;
    } else if (op == "new") {
      in->op = Opcode::kNew;
      if (!expect_ident("a type name", &in->type)) return false;
      fields_.push_back({op_tok, in->type, {}});
    } else if (op == "newarray") {
      in->op = Opcode::kNewArray;
      if (!expect_ident("an element type (ref, int, ...)", &in->type)) return false;
      in->args.resize(1);
      if (!parse_comma_reg(&in->args[0])) return false;
    } else if (op == "getfield") {
      in->op = Opcode::kGetField;
      in->args.resize(1);
      if (!parse_reg(&in->args[0]) || !expect_punct(',') || !parse_field_ref(in)) return false;
    } else if (op == "putfield") {
      in->op = Opcode::kPutField;
      dst_rule = Dst::kForbidden;
      in->args.resize(2);
      if (!parse_reg(&in->args[0]) || !expect_punct(',') || !parse_field_ref(in) || !parse_comma_reg(&in->args[1])) return false;
    } else if (op == "aget") {
      in->op = Opcode::kArrayGet;
      in->args.resize(2);
      if (!parse_reg(&in->args[0]) || !parse_comma_reg(&in->args[1])) return false;
    } else if (op == "aput") {
      in->op = Opcode::kArrayPut;
      dst_rule = Dst::kForbidden;
      in->args.resize(3);
      if (!parse_reg(&in->args[0]) || !parse_comma_reg(&in->args[1]) || !parse_comma_reg(&in->args[2])) return false;
    } else if (op == "alen") {
      in->op = Opcode::kArrayLength;
      in->args.resize(1);
      if (!parse_reg(&in->args[0])) return false;
    } else if (op == "invoke" || op == "invoke.nogc" || op == "call" || op == "call.nogc" || op == "invoke.marked" ||
               op == "invoke.nogc.marked" || op == "call.marked" || op == "call.nogc.marked") {
      bool virt = op.substr(0, 6) == "invoke";
      in->op = virt ? Opcode::kInvoke : Opcode::kCallStatic;
      in->may_gc = op.find(".nogc") == std::string_view::npos;
      in->result_marked = op.find(".marked") != std::string_view::npos;
      dst_rule = Dst::kOptional;
      if (!expect_ident("a callee name", &in->name)) return false;
      if (!parse_call_args(in, virt)) return false;
    } else if (op == "monitorenter" || op == "monitorexit") {
      in->op = op == "monitorenter" ? Opcode::kMonitorEnter : Opcode::kMonitorExit;
      dst_rule = Dst::kForbidden;
      in->args.resize(1);
      if (!parse_reg(&in->args[0])) return false;
    } else if (op == "refeq") {
      in->op = Opcode::kRefEqual;
      in->args.resize(2);
      if (!parse_reg(&in->args[0]) || !parse_comma_reg(&in->args[1])) return false;
    } else if (op == "safepoint") {
      in->op = Opcode::kSafepoint;
      dst_rule = Dst::kForbidden;
    } else if (op == "goto") {
      in->op = Opcode::kGoto;
      dst_rule = Dst::kForbidden;
      if (!parse_label(in)) return false;
    } else if (op == "br") {
      in->op = Opcode::kBranch;
      dst_rule = Dst::kForbidden;
      in->args.resize(1);
      if (!parse_reg(&in->args[0]) || !expect_punct(',') || !parse_label(in) || !expect_punct(',') || !parse_label(in))
        return false;
    } else if (op == "switch") {
      in->op = Opcode::kSwitch;
      dst_rule = Dst::kForbidden;
      in->args.resize(1);
      if (!parse_reg(&in->args[0])) return false;
      while (is_punct(',')) {
        bump();
        if (!parse_label(in)) return false;
      }
      if (in->targets.empty()) return fail("',' and at least one block label");
    } else if (op == "ret") {
      in->op = Opcode::kReturn;
      dst_rule = Dst::kForbidden;
      if (tok_.kind == Tok::kIdent) {
        in->args.resize(1);
        if (!parse_reg(&in->args[0])) return false;
      }
    } else {
      fail_at(op_tok, fmt::format("an instruction opcode, found '{}'", op), false);
      return false;
    }
    if (dst_rule == Dst::kRequired && !has_dst) {
      fail_at(first, fmt::format("a destination register ('vN = {} ...')", op), false);
      return false;
    }
    if (dst_rule == Dst::kForbidden && has_dst) {
      fail_at(first, fmt::format("no destination register for '{}'", op), false);
      return false;
    }
    if (is_punct('#')) {
      *site_tok = tok_;
      if (!is_access(in->op)) return fail(fmt::format("end of line ('{}' is not an access and has no site)", op));
      bump();
      std::int64_t s = 0;
      Token stok = tok_;
      if (!parse_int(&s)) return false;
      if (s < 0 || s >= static_cast<std::int64_t>(kNoSite) - 1) {
        fail_at(stok, fmt::format("a site id in 0..{}, found {}", kNoSite - 2, s), false);
        return false;
      }
      in->site = static_cast<SiteId>(s);
    }
    return true;
  }

  Lexer lex_;
  std::string_view filename_;
  Token tok_;
  bool error_set_ = false;
  std::string error_;
  std::optional<std::uint32_t> declared_regs_;
  std::int64_t max_reg_ = -1;
  std::vector<PendingField> fields_;
  std::vector<Token> pending_labels_;
};

void append_reg(std::string* out, Reg r) { fmt::format_to(std::back_inserter(*out), "v{}", r); }

}  // namespace

Result<Module> parse_module(std::string_view text, std::string_view filename) {
  Parser p(text, filename);
  return p.run();
}

std::string print_instr(const Function& f, const Instr& in) {
  std::string s;
  auto out = std::back_inserter(s);
  if (in.dst != kNoReg) {
    append_reg(&s, in.dst);
    s += " = ";
  }
  auto regs = [&](std::size_t from) {
    for (std::size_t i = from; i < in.args.size(); ++i) {
      if (i > from) s += ", ";
      append_reg(&s, in.args[i]);
    }
  };
  auto label = [&](BlockId b) {
    if (b < f.blocks.size()) {
      s += f.blocks[b].name;
    } else {
      fmt::format_to(out, "<bad block {}>", b);
    }
  };
  switch (in.op) {
    case Opcode::kConst: fmt::format_to(out, "const {}", in.imm); break;
    case Opcode::kNull: s += "null"; break;
    case Opcode::kMove: s += "move "; regs(0); break;
    case Opcode::kBinary:
      fmt::format_to(out, "{} ", binary_op_name(static_cast<BinaryOp>(in.subop)));
      regs(0);
      break;
    case Opcode::kCompare:
      fmt::format_to(out, "cmp.{} ", compare_op_name(static_cast<CompareOp>(in.subop)));
      regs(0);
      break;
    case Opcode::kNew: fmt::format_to(out, "new {}", in.type); break;
    case Opcode::kNewArray: fmt::format_to(out, "newarray {}, ", in.type); regs(0); break;
    case Opcode::kGetField:
      s += "getfield ";
      regs(0);
      fmt::format_to(out, ", {}.{}", in.type, in.name);
      break;
    case Opcode::kPutField:
      s += "putfield ";
      if (!in.args.empty()) append_reg(&s, in.args[0]);
      fmt::format_to(out, ", {}.{}", in.type, in.name);
      if (in.args.size() > 1) {
        s += ", ";
        regs(1);
      }
      break;
    case Opcode::kArrayGet: s += "aget "; regs(0); break;
    case Opcode::kArrayPut: s += "aput "; regs(0); break;
    case Opcode::kArrayLength: s += "alen "; regs(0); break;
    case Opcode::kInvoke:
    case Opcode::kCallStatic:
      fmt::format_to(out, "{}{}{} {}(", in.op == Opcode::kInvoke ? "invoke" : "call", in.may_gc ? "" : ".nogc",
                     in.result_marked ? ".marked" : "", in.name);
      regs(0);
      s += ")";
      break;
    case Opcode::kMonitorEnter: s += "monitorenter "; regs(0); break;
    case Opcode::kMonitorExit: s += "monitorexit "; regs(0); break;
    case Opcode::kRefEqual: s += "refeq "; regs(0); break;
    case Opcode::kSafepoint: s += "safepoint"; break;
    case Opcode::kGoto:
      s += "goto ";
      if (!in.targets.empty()) label(in.targets[0]);
      break;
    case Opcode::kBranch:
      s += "br ";
      regs(0);
      for (BlockId t : in.targets) {
        s += ", ";
        label(t);
      }
      break;
    case Opcode::kSwitch:
      s += "switch ";
      regs(0);
      for (BlockId t : in.targets) {
        s += ", ";
        label(t);
      }
      break;
    case Opcode::kReturn:
      s += "ret";
      if (!in.args.empty()) {
        s += " ";
        regs(0);
      }
      break;
  }
  if (is_access(in.op) && in.site != kNoSite) fmt::format_to(out, " #{}", in.site);
  return s;
}

std::string print_function(const Function& f, const PrintOptions& options) {
  std::string s;
  auto out = std::back_inserter(s);
  fmt::format_to(out, "func {}(", f.name);
  for (std::size_t i = 0; i < f.params.size(); ++i) {
    if (i > 0) s += ", ";
    if (i == 0 && f.has_receiver) s += "this ";
    append_reg(&s, f.params[i]);
  }
  fmt::format_to(out, ") regs {} {{\n", f.num_regs);
  for (BlockId b = 0; b < f.blocks.size(); ++b) {
    const Block& block = f.blocks[b];
    fmt::format_to(out, "{}:\n", block.name);
    for (std::size_t i = 0; i < block.instrs.size(); ++i) {
      s += "  ";
      s += print_instr(f, block.instrs[i]);
      if (options.annotate) {
        std::string note = options.annotate(f, b, i);
        if (!note.empty()) {
          s += "  ; ";
          s += note;
        }
      }
      s += '\n';
    }
  }
  s += "}\n";
  return s;
}

std::string print_module(const Module& m, const PrintOptions& options) {
  std::string s;
  auto out = std::back_inserter(s);
  bool first = true;
  for (const Type& t : m.types) {
    fmt::format_to(out, "type {} {{", t.name);
    for (std::size_t i = 0; i < t.fields.size(); ++i) fmt::format_to(out, "{} {}: {}", i ? "," : "", t.fields[i].name, t.fields[i].kind);
    s += t.fields.empty() ? "}\n" : " }\n";
    first = false;
  }
  for (const Function& f : m.functions) {
    if (!first) s += '\n';
    first = false;
    s += print_function(f, options);
  }
  return s;
}

}  // namespace objprof::ir
