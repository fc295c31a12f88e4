// Parser and printer of the IR text format: exact round trips and parse errors that name line,
// column and what was expected.
#include <catch2/catch.hpp>

#include "ir_test_util.h"
#include "objprof/ir/analysis.h"
#include "objprof/ir/generate.h"
#include "objprof/ir/text.h"

namespace objprof::ir::text_test {
namespace {

const char* const kDataFiles[] = {"straight_line.ir", "fig4b.ir",       "fig4c.ir",     "diamond.ir",
                                  "loop_reassign.ir", "irreducible.ir", "safepoint.ir", "unreachable.ir"};

std::string parse_error(std::string_view text) {
  auto m = parse_module(text, "t.ir");
  if (m) return "parsed";
  CHECK(m.error().code == ErrorCode::kParse);
  return m.error().message;
}

TEST_CASE("IR text: every hand-written file round-trips exactly", "[ir]") {
  for (const char* name : kDataFiles) {
    INFO(name);
    std::string text = test::read_file(test::data_path(name));
    REQUIRE(!text.empty());
    auto m1 = parse_module(text, name);
    REQUIRE(m1.ok());
    std::string printed = print_module(*m1);
    auto m2 = parse_module(printed, name);
    REQUIRE(m2.ok());
    CHECK(*m1 == *m2);
    CHECK(print_module(*m2) == printed);
    for (const Function& f : m1->functions) CHECK(verify_function(f, &*m1).ok());
  }
}

TEST_CASE("IR text: generated functions round-trip exactly", "[ir]") {
  for (int shape = 0; shape < 3; ++shape) {
    GenOptions o;
    o.blocks = 30;
    o.shape = static_cast<CfgShape>(shape);
    Module m = generate_module(7 + static_cast<std::uint64_t>(shape), 20, o);
    std::string printed = print_module(m);
    auto back = parse_module(printed, "gen");
    REQUIRE(back.ok());
    CHECK(*back == m);
    CHECK(print_module(*back) == printed);
  }
}

TEST_CASE("IR text: the printer's canonical form", "[ir]") {
  const char* text =
      "type T { r: ref, n: int }\n"
      "\n"
      "func f(v0) regs 4 {\n"
      "entry:\n"
      "  v1 = const -5\n"
      "  v2 = add v1, v1\n"
      "  v3 = cmp.lt v1, v2\n"
      "  v1 = newarray ref, v2\n"
      "  aput v1, v2, v0 #1\n"
      "  v2 = aget v1, v2 #0\n"
      "  v2 = call.nogc S.f()\n"
      "  invoke T.m(v0, v1) #2\n"
      "  switch v3, a, b, a\n"
      "a:\n"
      "  v3 = alen v1 #3\n"
      "  ret\n"
      "b:\n"
      "  safepoint\n"
      "  v3 = null\n"
      "  ret v3\n"
      "}\n";
  auto m = parse_module(text);
  REQUIRE(m.ok());
  CHECK(print_module(*m) == text);
}

TEST_CASE("IR text: sites are optional and assigned after the largest written one", "[ir]") {
  auto m = parse_module("type T { r: ref }\nfunc f(v0) {\nentry:\n  v1 = getfield v0, T.r\n  monitorenter v0 #7\n  ret\n}\n");
  REQUIRE(m.ok());
  const Function& f = m->functions[0];
  CHECK(f.num_regs == 2);
  CHECK(f.blocks[0].instrs[0].site == 8);
  CHECK(f.blocks[0].instrs[1].site == 7);
}

TEST_CASE("IR text: parse errors name line, column and what was expected", "[ir]") {
  CHECK(parse_error("func f() {\nentry:\n  v1 = bogus v0\n  ret\n}\n") ==
        "t.ir:3:8: expected an instruction opcode, found 'bogus'");
  CHECK(parse_error("func f() {\nentry:\n  v1 = const\n  ret\n}\n") == "t.ir:3:13: expected an integer, found end of line");
  CHECK(parse_error("func f() {\nentry:\n  goto nowhere\n}\n") ==
        "t.ir:3:8: expected a block label of this function, found unknown label 'nowhere'");
  CHECK(parse_error("func f() {\nentry:\n  v1 = const 1\n}\n") ==
        "t.ir:4:1: expected a terminator (goto, br, switch, ret) ending block 'entry', found '}'");
  CHECK(parse_error("func f(v0) regs 1 {\nentry:\n  v1 = move v0\n  ret\n}\n") ==
        "t.ir:3:3: expected a register below v1 (the function declares regs 1), found 'v1'");
  CHECK(parse_error("type T { a: ref }\nfunc f(v0) {\nentry:\n  v1 = getfield v0, T.b #1\n  ret\n}\n") ==
        "t.ir:4:21: expected a field of type 'T', found unknown field 'b'");
  CHECK(parse_error("func f(v0) {\nentry:\n  monitorenter v0 #1\n  monitorexit v0 #1\n  ret\n}\n") ==
        "t.ir:4:18: expected a site id unique in the function, found duplicate #1");
  CHECK(parse_error("func f(v0) {\nentry:\n  safepoint #3\n  ret\n}\n") ==
        "t.ir:3:13: expected end of line ('safepoint' is not an access and has no site), found '#'");
  CHECK(parse_error("func f(v0) {\nentry:\n  ret\n") == "t.ir:4:1: expected '}' closing function, found end of input");
  CHECK(parse_error("func f(v0) {\nentry:\n  v1 = const 99999999999999999999\n  ret\n}\n") ==
        "t.ir:3:14: expected an integer in 64-bit range, found '99999999999999999999'");
  CHECK(parse_error("funk f() {}\n") == "t.ir:1:1: expected 'type' or 'func', found 'funk'");
  CHECK(parse_error("func f(v0) {\nentry:\n  putfield v0, T.x, v0\n  ret\n}\n") ==
        "t.ir:3:16: expected a declared type, found unknown type 'T'");
  CHECK(parse_error("func f(v0) {\nentry:\n  v1 = monitorenter v0\n  ret\n}\n") ==
        "t.ir:3:3: expected no destination register for 'monitorenter'");
  CHECK(parse_error("func f(v0) {\nentry:\n  ret\nentry:\n  ret\n}\n") ==
        "t.ir:4:1: expected a new block label, found duplicate label 'entry'");
  CHECK(parse_error("func f() {\nentry:\n  ret\n}\n\x01") == "t.ir:5:1: expected 'type' or 'func', found byte 0x01");
}

TEST_CASE("IR text: truncated and corrupted input never crashes", "[ir]") {
  std::string text = test::read_file(test::data_path("loop_reassign.ir"));
  REQUIRE(text.size() > 100);
  std::size_t parsed = 0;
  for (std::size_t n = 0; n <= text.size(); ++n) {
    auto m = parse_module(std::string_view(text).substr(0, n));
    parsed += m.ok() ? 1 : 0;
    if (!m) CHECK(m.error().message.find("expected") != std::string::npos);
  }
  CHECK(parsed >= 1);  // at least the whole text
  const char junk[] = {'\0', '#', ':', '{', '}', ',', 'v', '9', '\n', '(', '-', '\xff'};
  for (std::size_t i = 0; i < text.size(); i += 3) {
    std::string bad = text;
    bad[i] = junk[i % sizeof(junk)];
    auto m = parse_module(bad);
    if (m) {
      for (const Function& f : m->functions) (void)verify_function(f, &*m);
    }
  }
}

}  // namespace
}  // namespace objprof::ir
