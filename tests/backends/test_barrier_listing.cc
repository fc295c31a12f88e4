// The emitted barriers as asmjit prints them (any host): the arm64 racy sequence against
// seed 001 §2.3, the x86_64 variants' distinguishing instructions, and, for every variant on
// both architectures, that only declared scratch registers are written.
#include "listing.h"

#include <algorithm>

namespace test_barrier_listing {

using namespace objprof;
using namespace objprof::backends;
using objprof::backends::test::a64_listing;
using objprof::backends::test::Effects;
using objprof::backends::test::Listing;
using objprof::backends::test::x86_listing;

namespace a64 = asmjit::a64;
namespace x86 = asmjit::x86;

namespace {

// The seed's space: main_space from 0x12c00000 to 0x32c00000, K = 8.
// (BarrierDescriptor holds an atomic, so it is filled in place rather than returned.)
void seed_space(BarrierDescriptor& d) {
  d.begin = 0x12c00000;
  d.size = 0x32c00000 - 0x12c00000;
  d.log2_granule = 3;
}

bool has_line(const Listing& l, const std::string& line) {
  return std::find(l.lines.begin(), l.lines.end(), line) != l.lines.end();
}

bool has_prefix(const Listing& l, const std::string& prefix) {
  return std::any_of(l.lines.begin(), l.lines.end(), [&](const std::string& s) { return s.rfind(prefix, 0) == 0; });
}

std::size_t count_prefix(const Listing& l, const std::string& prefix) {
  return static_cast<std::size_t>(
      std::count_if(l.lines.begin(), l.lines.end(), [&](const std::string& s) { return s.rfind(prefix, 0) == 0; }));
}

}  // namespace

TEST_CASE("backends: arm64 racy barrier is the seed 001 section 2.3 sequence", "[backends][arm64][listing]") {
  // Seed 001 §2.3 (ART, object in x1, thread in x19 = tr), step by step:
  //   range check    mov x16,#end; cmp x1,x16; b.ge; mov x16,#begin; cmp x16,x1; b.le
  //   cache compare  ldr x16,[tr,#2440]; cmp x16,x1; b.eq
  //   store cache    str x1,[tr,#2440]
  //   byte and bit   mov x16,#begin; sub x16,x1,x16; lsr x16,x16,#3; and x15,x16,#7;
  //                  lsr x16,x16,#3; mov x17,#bitmap; movk; add x17,x17,x16; mov x16,#1;
  //                  lsl x16,x16,x15
  //   load/or/store  ldrsb w15,[x17]; orr w15,w15,w16; strb w15,[x17]
  // Ours in the seed's order (range_first): the range check is one subtraction and one
  // unsigned compare, and its offset is reused for byte and bit; the bitmap address comes
  // from the descriptor (the buffer is swapped at every GC) instead of an immediate; ldrb
  // replaces ldrsb (only the low byte is stored back).
  BarrierDescriptor desc;
  seed_space(desc);
  A64BarrierRegs regs = A64BarrierRegs::art(a64::x1);
  regs.desc = a64::x2;
  EmitterConfig cfg;
  cfg.cache = CacheLocation::kThreadField;
  cfg.mark = MarkMode::kRacy;
  cfg.bounds = BoundsSource::kImmediate;
  cfg.range_first = true;
  const Listing l = a64_listing(cfg, desc, regs);
  INFO(l.text);
  REQUIRE(l.status.ok());
  const std::vector<std::string> expected = {
      "movz", "sub", "movz", "cmp", "b.cs",         // range check against the space
      "ldr", "cmp", "b.eq",                         // compare with the cached object
      "str",                                        // store the new cache
      "ldr", "add", "ubfx", "mov", "lsl",           // compute byte and bit
      "ldrb", "orr", "strb",                        // load/or/store the byte
  };
  CHECK(l.mnemonics == expected);
  // The operands that make it the seed's sequence.
  CHECK(l.lines[0] == "movz x16, 4800, 16");  // mov x16, #0x12c00000
  CHECK(l.lines[1] == "sub x16, x1, x16");
  CHECK(l.lines[2] == "movz x17, 8192, 16");  // size 0x20000000
  CHECK(l.lines[5] == "ldr x17, [x19]");      // [tr, #cache]
  CHECK(l.lines[6] == "cmp x17, x1");
  CHECK(l.lines[8] == "str x1, [x19]");
  CHECK(l.lines[9] == "ldr x17, [x2, 16]");   // BarrierDescriptor::bitmap
  CHECK(l.lines[10] == "add x17, x17, x16, 6");  // byte: offset >> (log2 K + 3)
  CHECK(l.lines[11] == "ubfx w16, w16, 3, 3");   // bit: the granule's low three bits
  CHECK(l.lines[14] == "ldrb w15, [x17]");
  CHECK(l.lines[15] == "orr w15, w15, w16");
  CHECK(l.lines[16] == "strb w15, [x17]");

  // The default order puts the cache compare first (a hit is three instructions); the rest
  // is the same sequence.
  cfg.range_first = false;
  const Listing d = a64_listing(cfg, desc, regs);
  REQUIRE(d.status.ok());
  std::vector<std::string> reordered(expected.begin() + 5, expected.begin() + 8);
  reordered.insert(reordered.end(), expected.begin(), expected.begin() + 5);
  reordered.insert(reordered.end(), expected.begin() + 8, expected.end());
  CHECK(d.mnemonics == reordered);
}

TEST_CASE("backends: arm64 atomic marks use LSE stsetb or an exclusive loop", "[backends][arm64][listing]") {
  BarrierDescriptor desc;
  seed_space(desc);
  A64BarrierRegs regs = A64BarrierRegs::art(a64::x1);
  EmitterConfig cfg;
  cfg.mark = MarkMode::kAtomic;
  cfg.a64_atomics = A64Atomics::kLse;
  Listing lse = a64_listing(cfg, desc, regs);
  REQUIRE(lse.status.ok());
  CHECK(has_line(lse, "stsetb w16, [x17]"));
  CHECK_FALSE(has_prefix(lse, "ldrb"));
  CHECK_FALSE(has_prefix(lse, "strb"));

  cfg.a64_atomics = A64Atomics::kExclusive;
  Listing ex = a64_listing(cfg, desc, regs);
  REQUIRE(ex.status.ok());
  const auto at = std::find(ex.mnemonics.begin(), ex.mnemonics.end(), "ldxrb");
  REQUIRE(at != ex.mnemonics.end());
  CHECK(std::vector<std::string>(at, ex.mnemonics.end()) == std::vector<std::string>{"ldxrb", "orr", "stxrb", "cbnz"});
  CHECK(has_line(ex, "stxrb w14, w15, [x17]"));
  CHECK(a64_scratch_count(cfg) == 4);

  cfg.mark = MarkMode::kAtomicTestFirst;
  cfg.a64_atomics = A64Atomics::kLse;
  Listing tf = a64_listing(cfg, desc, regs);
  REQUIRE(tf.status.ok());
  const auto ld = std::find(tf.mnemonics.begin(), tf.mnemonics.end(), "ldrb");
  REQUIRE(ld != tf.mnemonics.end());
  CHECK(std::vector<std::string>(ld, tf.mnemonics.end()) == std::vector<std::string>{"ldrb", "tst", "b.ne", "stsetb"});
  CHECK(a64_scratch_count(cfg) == 3);
}

TEST_CASE("backends: arm64 racy-test-first marks test the bit and store only when it is clear", "[backends][arm64][listing]") {
  BarrierDescriptor desc;
  seed_space(desc);
  const A64BarrierRegs regs = A64BarrierRegs::art(a64::x1);
  for (A64Atomics atomics : {A64Atomics::kLse, A64Atomics::kExclusive}) {  // neither is used: no atomics
    EmitterConfig cfg;
    cfg.mark = MarkMode::kRacyTestFirst;
    cfg.a64_atomics = atomics;
    const Listing l = a64_listing(cfg, desc, regs);
    INFO(l.text);
    REQUIRE(l.status.ok());
    const auto ld = std::find(l.mnemonics.begin(), l.mnemonics.end(), "ldrb");
    REQUIRE(ld != l.mnemonics.end());
    CHECK(std::vector<std::string>(ld, l.mnemonics.end()) == std::vector<std::string>{"ldrb", "tst", "b.ne", "orr", "strb"});
    CHECK(a64_scratch_count(cfg) == 3);
  }
}

TEST_CASE("backends: x86_64 barrier variants differ exactly where their configuration says", "[backends][x86_64][listing]") {
  BarrierDescriptor desc;
  seed_space(desc);
  X86BarrierRegs regs = X86BarrierRegs::sysv(x86::rdx);
  regs.desc = x86::rsi;
  for (const EmitterConfig& cfg : all_emitter_configs()) {
    const Listing l = x86_listing(cfg, desc, regs);
    INFO(cfg.name() << "\n" << l.text);
    REQUIRE(l.status.ok());
    // Marking.
    const bool racy = cfg.mark == MarkMode::kRacy || cfg.mark == MarkMode::kRacyTestFirst;
    const bool racy_or = has_line(l, "or byte ptr [r11], al");
    const bool lock_or = has_line(l, "lock or byte ptr [r11], al");
    const bool test = has_line(l, "test byte ptr [r11], al");
    CHECK(racy_or == racy);
    CHECK(lock_or == !racy);
    CHECK(test == (cfg.mark == MarkMode::kAtomicTestFirst || cfg.mark == MarkMode::kRacyTestFirst));
    // Cache.
    CHECK(has_line(l, "cmp rdx, qword ptr [r15]") == (cfg.cache == CacheLocation::kThreadField));
    CHECK(has_line(l, "mov qword ptr [r15], rdx") == (cfg.cache == CacheLocation::kThreadField));
    CHECK(has_line(l, "cmp rdx, r14") == (cfg.cache == CacheLocation::kPinnedRegister));
    CHECK(has_line(l, "mov r14, rdx") == (cfg.cache == CacheLocation::kPinnedRegister));
    CHECK(count_prefix(l, "je ") == (cfg.uses_cache() ? 1u : 0u));
    // Counters: one non-locked increment per counter, none otherwise.
    CHECK(has_line(l, "inc qword ptr [r15+8]") == cfg.count);
    CHECK(has_line(l, "inc qword ptr [r15+16]") == (cfg.count && cfg.uses_cache()));
    CHECK(has_line(l, "inc qword ptr [r15+24]") == cfg.count);
    CHECK(count_prefix(l, "lock") == (racy ? 0u : 1u));
    // Bounds: loaded from the descriptor or immediates (this space's begin fits a disp32).
    CHECK(has_line(l, "sub r10, qword ptr [rsi]") == (cfg.bounds == BoundsSource::kDescriptor));
    CHECK(has_line(l, "cmp r10, qword ptr [rsi+8]") == (cfg.bounds == BoundsSource::kDescriptor));
    CHECK(has_line(l, "cmp r10, 536870912") == (cfg.bounds == BoundsSource::kImmediate));
    // The bitmap pointer is always reloaded: the buffer is swapped at every GC.
    CHECK(has_line(l, "add r11, qword ptr [rsi+16]"));
    // Without a thread-field cache or counters the thread register is not touched.
    if (!cfg.uses_thread()) CHECK_FALSE(l.text.find("r15") != std::string::npos);
    // The range-first order puts the unsigned range branch before the cache branch.
    if (cfg.uses_cache()) {
      const auto jae = std::find(l.mnemonics.begin(), l.mnemonics.end(), "jae");
      const auto je = std::find(l.mnemonics.begin(), l.mnemonics.end(), "je");
      CHECK((jae < je) == cfg.range_first);
    }
  }
}

TEST_CASE("backends: A store-only barrier stores the cache and never compares, on both ISAs", "[backends][listing]") {
  BarrierDescriptor desc;
  seed_space(desc);
  for (CacheLocation where : {CacheLocation::kThreadField, CacheLocation::kPinnedRegister}) {
    EmitterConfig cfg;
    cfg.cache = where;
    cfg.store_only = true;
    const bool field = where == CacheLocation::kThreadField;
    X86BarrierRegs xr = X86BarrierRegs::sysv(x86::rdx);
    xr.desc = x86::rsi;
    const Listing x = x86_listing(cfg, desc, xr);
    INFO(cfg.name() << "\n" << x.text);
    REQUIRE(x.status.ok());
    CHECK_FALSE(has_line(x, field ? "cmp rdx, qword ptr [r15]" : "cmp rdx, r14"));
    CHECK(has_line(x, field ? "mov qword ptr [r15], rdx" : "mov r14, rdx"));
    CHECK(count_prefix(x, "je ") == 0);
    A64BarrierRegs ar = A64BarrierRegs::art(a64::x1);
    ar.desc = a64::x2;
    const Listing a = a64_listing(cfg, desc, ar);
    INFO(a.text);
    REQUIRE(a.status.ok());
    CHECK(count_prefix(a, "b.eq") == 0);
    CHECK(has_line(a, field ? "str x1, [x19]" : "mov x21, x1"));
    CHECK_FALSE(has_line(a, field ? "ldr x17, [x19]" : "cmp x21, x1"));
  }
  // Store-only needs a cache, and has no compare for range-first to order.
  EmitterConfig bad;
  bad.cache = CacheLocation::kNone;
  bad.store_only = true;
  CHECK_FALSE(bad.validate().ok());
  bad.cache = CacheLocation::kThreadField;
  bad.range_first = true;
  CHECK_FALSE(bad.validate().ok());
  auto parsed = parse_emitter_config("pinned/racy/desc/store-only/count");
  REQUIRE(parsed.ok());
  CHECK(parsed->store_only);
  CHECK(parsed->name() == "pinned/racy/desc/count/store-only");
}

TEST_CASE("backends: x86_64 immediates: high spaces and spaces over 2 GiB use 64-bit moves", "[backends][x86_64][listing]") {
  BarrierDescriptor desc;
  desc.begin = 0x7f0000000000;
  desc.size = (std::uint64_t{1} << 31) + 4096;
  desc.log2_granule = 4;
  X86BarrierRegs regs = X86BarrierRegs::sysv(x86::rdx);
  EmitterConfig cfg;
  cfg.bounds = BoundsSource::kImmediate;
  const Listing l = x86_listing(cfg, desc, regs);
  INFO(l.text);
  REQUIRE(l.status.ok());
  CHECK(has_line(l, "mov r10, " + std::to_string(static_cast<std::int64_t>(0 - desc.begin))));
  CHECK(has_line(l, "add r10, rdx"));
  CHECK(has_line(l, "mov r11, " + std::to_string(desc.size)));
  CHECK(has_line(l, "cmp r10, r11"));
  CHECK(has_line(l, "shr r11, 7"));  // byte index: log2 K + 3
  CHECK(has_line(l, "shr r10, 4"));  // granule
  // No descriptor register: &desc is baked once and reused for the bitmap load.
  CHECK(count_prefix(l, "mov rax, ") == 1);
  CHECK(has_line(l, "add r11, qword ptr [rax+16]"));
}

TEST_CASE("backends: Emitted barriers write only their declared scratch registers", "[backends][listing]") {
  BarrierDescriptor desc;
  seed_space(desc);
  for (const EmitterConfig& base : all_emitter_configs()) {
    for (bool desc_reg : {true, false}) {
      for (bool ool : {false, true}) {
        if (ool && (!base.uses_cache() || base.range_first)) continue;
        X86BarrierRegs regs = X86BarrierRegs::sysv(x86::rdx);
        if (desc_reg) regs.desc = x86::rsi;
        const Effects fx =
            objprof::backends::test::effects<x86::Builder>(asmjit::Arch::kX64, base, desc, regs, ool);
        INFO("x86_64 " << base.name() << (desc_reg ? " desc in rsi" : " desc baked") << (ool ? " out of line" : ""));
        std::set<std::uint32_t> allowed;
        for (const x86::Gp& g : regs.scratch) allowed.insert(g.id());
        if (base.cache == CacheLocation::kPinnedRegister) allowed.insert(regs.cache.id());
        for (std::uint32_t id : fx.written) CHECK(allowed.count(id) == 1);
        // Scratch registers are never read before the barrier wrote them.
        for (const x86::Gp& g : regs.scratch) CHECK(fx.read_before_write.count(g.id()) == 0);
        // Memory is written only through the thread register (cache, counters) or the bitmap
        // byte address in the second scratch register.
        for (std::uint32_t id : fx.store_bases) CHECK((id == regs.thread.id() || id == regs.scratch[1].id()));
      }
      for (int mode = 0; mode < 4; ++mode) {
        const bool ool = mode >= 2;
        if (ool && (!base.uses_cache() || base.range_first)) continue;
        EmitterConfig cfg = base;
        cfg.a64_atomics = mode % 2 == 0 ? A64Atomics::kLse : A64Atomics::kExclusive;
        A64BarrierRegs regs = A64BarrierRegs::art(a64::x1);
        if (desc_reg) regs.desc = a64::x2;
        const Effects fx =
            objprof::backends::test::effects<a64::Builder>(asmjit::Arch::kAArch64, cfg, desc, regs, ool);
        INFO("arm64 " << cfg.name() << (desc_reg ? " desc in x2" : " desc baked") << (ool ? " out of line" : ""));
        std::set<std::uint32_t> allowed;
        for (int i = 0; i < a64_scratch_count(cfg); ++i) allowed.insert(regs.scratch[static_cast<std::size_t>(i)].id());
        if (cfg.cache == CacheLocation::kPinnedRegister) allowed.insert(regs.cache.id());
        for (std::uint32_t id : fx.written) CHECK(allowed.count(id) == 1);
        for (const a64::Gp& g : regs.scratch) CHECK(fx.read_before_write.count(g.id()) == 0);
        for (std::uint32_t id : fx.store_bases) CHECK((id == regs.thread.id() || id == regs.scratch[1].id()));
        CHECK(fx.written.count(a64::x19.id()) == 0);  // ART's thread register
        CHECK(fx.written.count(a64::x20.id()) == 0);  // ART's marking register
      }
    }
  }
}

TEST_CASE("backends: Emitters refuse aliased, missing or wrong-width registers and foreign emitters", "[backends][listing]") {
  BarrierDescriptor desc;
  seed_space(desc);
  EmitterConfig cfg;
  cfg.cache = CacheLocation::kPinnedRegister;
  cfg.count = true;
  {
    X86BarrierRegs ok = X86BarrierRegs::sysv(x86::rdx);
    REQUIRE(x86_listing(cfg, desc, ok).status.ok());
    X86BarrierRegs r = ok;
    r.scratch[1] = x86::rdx;  // scratch aliases obj
    Listing l = x86_listing(cfg, desc, r);
    REQUIRE_FALSE(l.status.ok());
    CHECK(l.status.error().message.find("aliases the object") != std::string::npos);
    CHECK(l.lines.empty());  // nothing emitted
    r = ok;
    r.cache = x86::r15;  // pinned cache aliases thread
    CHECK_FALSE(x86_listing(cfg, desc, r).status.ok());
    r = ok;
    r.obj = x86::edx;  // 32-bit
    CHECK_FALSE(x86_listing(cfg, desc, r).status.ok());
    r = ok;
    r.thread = x86::Gp();  // counting needs the thread
    CHECK_FALSE(x86_listing(cfg, desc, r).status.ok());
    r = ok;
    r.scratch[2] = x86::rsp;
    CHECK_FALSE(x86_listing(cfg, desc, r).status.ok());
    // An x86 register set handed to an arm64 emitter.
    asmjit::CodeHolder code;
    REQUIRE(code.init(asmjit::Environment(asmjit::Arch::kAArch64)) == asmjit::kErrorOk);
    a64::Assembler a(&code);
    Status s = emit_access_barrier(a, cfg, desc, ok);
    REQUIRE_FALSE(s.ok());
    CHECK(s.error().message.find("not attached to x86_64") != std::string::npos);
  }
  {
    A64BarrierRegs ok = A64BarrierRegs::art(a64::x1);
    REQUIRE(a64_listing(cfg, desc, ok).status.ok());
    A64BarrierRegs r = ok;
    r.scratch[0] = a64::x19;  // scratch aliases the thread register
    Listing l = a64_listing(cfg, desc, r);
    REQUIRE_FALSE(l.status.ok());
    CHECK(l.status.error().message.find("aliases the thread") != std::string::npos);
    r = ok;
    r.obj = a64::w1;
    CHECK_FALSE(a64_listing(cfg, desc, r).status.ok());
    r = ok;
    r.scratch[2] = a64::sp;
    CHECK_FALSE(a64_listing(cfg, desc, r).status.ok());
    // The exclusive loop needs a fourth scratch register; the others do not look at it.
    EmitterConfig ex = cfg;
    ex.mark = MarkMode::kAtomic;
    ex.a64_atomics = A64Atomics::kExclusive;
    r = ok;
    r.scratch[3] = a64::x1;
    CHECK_FALSE(a64_listing(ex, desc, r).status.ok());
    CHECK(a64_listing(cfg, desc, r).status.ok());
    BarrierDescriptor wide;
    seed_space(wide);
    wide.log2_granule = 40;
    CHECK_FALSE(a64_listing(cfg, wide, ok).status.ok());
  }
}

TEST_CASE("backends: The out-of-line form keeps a cache hit on the fall-through path", "[backends][listing]") {
  BarrierDescriptor desc;
  seed_space(desc);
  EmitterConfig cfg;  // field / racy / desc
  {
    A64BarrierRegs regs = A64BarrierRegs::art(a64::x1);
    regs.desc = a64::x2;
    auto [fast, slow] = objprof::backends::test::split_listings<a64::Assembler>(asmjit::Arch::kAArch64, cfg, desc, regs);
    INFO(fast.text << "--\n" << slow.text);
    REQUIRE(fast.status.ok());
    REQUIRE(slow.status.ok());
    CHECK(fast.mnemonics == std::vector<std::string>{"ldr", "cmp", "b.ne"});
    // The slow path is the whole barrier's miss path, then a branch back.
    const Listing whole = a64_listing(cfg, desc, regs);
    std::vector<std::string> expected(whole.mnemonics.begin() + 3, whole.mnemonics.end());
    expected.push_back("b");
    CHECK(slow.mnemonics == expected);
  }
  {
    X86BarrierRegs regs = X86BarrierRegs::sysv(x86::rdx);
    regs.desc = x86::rsi;
    cfg.cache = CacheLocation::kPinnedRegister;
    cfg.count = true;
    auto [fast, slow] = objprof::backends::test::split_listings<x86::Assembler>(asmjit::Arch::kX64, cfg, desc, regs);
    INFO(fast.text << "--\n" << slow.text);
    REQUIRE(fast.status.ok());
    REQUIRE(slow.status.ok());
    CHECK(fast.lines == std::vector<std::string>{"inc qword ptr [r15+8]", "cmp rdx, r14", "jne L0", "inc qword ptr [r15+16]"});
    CHECK(slow.mnemonics.front() == "mov");
    CHECK(slow.lines.back().find("jmp L1") != std::string::npos);  // back to resume (bound: "short jmp")
    CHECK(has_line(slow, "mov r14, rdx"));
    CHECK(has_line(slow, "inc qword ptr [r15+24]"));
  }
  // No cache, or the range check first: there is no fast path to split off.
  for (const char* name : {"none/racy/desc", "field/racy/desc/range-first"}) {
    INFO(name);
    auto [fast, slow] = objprof::backends::test::split_listings<x86::Assembler>(
        asmjit::Arch::kX64, *parse_emitter_config(name), desc, X86BarrierRegs::sysv(x86::rdx));
    REQUIRE_FALSE(fast.status.ok());
    CHECK(fast.status.error().message.find("out-of-line") != std::string::npos);
  }
}

// A VM's own thread struct (tests/backends/test_barrier_exec.cc runs the same layout): the
// cache slot at 40 and the counters at 56, reached through a register of the VM's choosing.
TEST_CASE("backends: The cache and counters are addressed at the configured offsets from any thread register",
          "[backends][listing]") {
  BarrierDescriptor desc;
  seed_space(desc);
  EmitterConfig cfg;
  cfg.count = true;
  cfg.fields.cache = 40;
  cfg.fields.counters = 56;
  {
    X86BarrierRegs regs = X86BarrierRegs::sysv(x86::rdx);
    regs.thread = x86::rbx;
    regs.desc = x86::rsi;
    const Listing l = x86_listing(cfg, desc, regs);
    INFO(l.text);
    REQUIRE(l.status.ok());
    CHECK(has_line(l, "cmp rdx, qword ptr [rbx+40]"));
    CHECK(has_line(l, "mov qword ptr [rbx+40], rdx"));
    CHECK(has_line(l, "inc qword ptr [rbx+56]"));  // executed
    CHECK(has_line(l, "inc qword ptr [rbx+64]"));  // cache_hits
    CHECK(has_line(l, "inc qword ptr [rbx+72]"));  // marks
    CHECK(l.text.find("r15") == std::string::npos);
    EmitterConfig neg = cfg;  // x86_64 also takes offsets below the register
    neg.fields.cache = -8;
    CHECK(has_line(x86_listing(neg, desc, regs), "cmp rdx, qword ptr [rbx-8]"));
  }
  {
    A64BarrierRegs regs = A64BarrierRegs::art(a64::x1);
    regs.thread = a64::x7;
    regs.desc = a64::x2;
    const Listing l = a64_listing(cfg, desc, regs);
    INFO(l.text);
    REQUIRE(l.status.ok());
    CHECK(has_line(l, "ldr x17, [x7, 40]"));
    CHECK(has_line(l, "str x1, [x7, 40]"));
    for (const char* counter : {"56", "64", "72"}) {
      CHECK(has_line(l, std::string("ldr x16, [x7, ") + counter + "]"));
      CHECK(has_line(l, std::string("str x16, [x7, ") + counter + "]"));
    }
    CHECK(l.text.find("x19") == std::string::npos);
    EmitterConfig top = cfg;  // the largest offset ldr/str encode
    top.fields.cache = 32760;
    CHECK(has_line(a64_listing(top, desc, regs), "ldr x17, [x7, 32760]"));
  }
}

TEST_CASE("backends: Emitters refuse thread-field offsets their ISA cannot encode and unusable thread registers",
          "[backends][listing]") {
  BarrierDescriptor desc;
  seed_space(desc);
  auto refused = [](const Status& s, const char* text) {
    INFO((s ? std::string("accepted") : s.error().message));
    return !s.ok() && s.error().message.find(text) != std::string::npos;
  };
  EmitterConfig cfg;
  cfg.fields.cache = 32768;  // beyond arm64's ldr/str immediate, fine for x86_64
  {
    const Listing a = a64_listing(cfg, desc, A64BarrierRegs::art(a64::x1));
    CHECK(refused(a.status, "arm64 barrier field/racy/desc/cache@32768: the cache offset 32768 cannot be encoded"));
    CHECK(a.lines.empty());  // nothing emitted
    CHECK(x86_listing(cfg, desc, X86BarrierRegs::sysv(x86::rdx)).status.ok());
    cfg.fields.cache = 12;
    CHECK(refused(a64_listing(cfg, desc, A64BarrierRegs::art(a64::x1)).status, "not a multiple of 8"));
    CHECK(refused(x86_listing(cfg, desc, X86BarrierRegs::sysv(x86::rdx)).status, "not a multiple of 8"));
    cfg.fields.cache = std::int64_t{1} << 32;
    CHECK(refused(x86_listing(cfg, desc, X86BarrierRegs::sysv(x86::rdx)).status, "32-bit displacement"));
  }
  // The pinned cache's load and store go through the same validation.
  cfg = EmitterConfig{};
  cfg.cache = CacheLocation::kPinnedRegister;
  cfg.fields.cache = -8;
  {
    asmjit::CodeHolder code;
    REQUIRE(code.init(asmjit::Environment(asmjit::Arch::kAArch64)) == asmjit::kErrorOk);
    a64::Assembler a(&code);
    A64BarrierRegs regs = A64BarrierRegs::art(a64::x1);
    CHECK(refused(emit_load_pinned_cache(a, cfg, regs), "unsigned offset"));
    CHECK(refused(emit_store_pinned_cache(a, cfg, regs), "unsigned offset"));
    cfg.fields.cache = 40;
    CHECK(emit_load_pinned_cache(a, cfg, regs).ok());
    regs.thread = a64::sp;
    CHECK(refused(emit_load_pinned_cache(a, cfg, regs), "other than sp"));
    regs.thread = a64::x21;  // the pinned cache register itself
    CHECK(refused(emit_store_pinned_cache(a, cfg, regs), "distinct"));
  }
  {
    asmjit::CodeHolder code;
    REQUIRE(code.init(asmjit::Environment(asmjit::Arch::kX64)) == asmjit::kErrorOk);
    x86::Assembler a(&code);
    X86BarrierRegs regs = X86BarrierRegs::sysv(x86::rdx);
    CHECK(emit_load_pinned_cache(a, cfg, regs).ok());
    regs.thread = x86::rsp;
    CHECK(refused(emit_load_pinned_cache(a, cfg, regs), "other than rsp"));
    regs.thread = x86::ebx;
    CHECK(refused(emit_store_pinned_cache(a, cfg, regs), "64-bit"));
  }
  // The thread register of a thread-field barrier: not sp/rsp, not 32-bit, not a scratch register.
  cfg = EmitterConfig{};
  cfg.fields.cache = 40;
  A64BarrierRegs ar = A64BarrierRegs::art(a64::x1);
  ar.thread = a64::sp;
  CHECK(refused(a64_listing(cfg, desc, ar).status, "thread register cannot be sp"));
  ar.thread = a64::w7;
  CHECK(refused(a64_listing(cfg, desc, ar).status, "thread register must be a 64-bit x register"));
  ar.thread = a64::x16;
  CHECK(refused(a64_listing(cfg, desc, ar).status, "scratch register aliases the thread register"));
  X86BarrierRegs xr = X86BarrierRegs::sysv(x86::rdx);
  xr.thread = x86::rsp;
  CHECK(refused(x86_listing(cfg, desc, xr).status, "thread register cannot be rsp"));
  xr.thread = x86::ebx;
  CHECK(refused(x86_listing(cfg, desc, xr).status, "thread register must be a 64-bit"));
  xr.thread = x86::rax;
  CHECK(refused(x86_listing(cfg, desc, xr).status, "scratch register aliases the thread register"));
}

}  // namespace test_barrier_listing
