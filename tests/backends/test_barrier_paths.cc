// Static path lengths of the emitted barriers (the arm64 "instructions per access" numbers).
#include "backends/barrier_paths.h"

#include "listing.h"

namespace test_barrier_paths {

using namespace objprof;
using namespace objprof::backends;

namespace {
void seed_space(BarrierDescriptor& d) {
  d.begin = 0x12c00000;
  d.size = 0x20000000;
  d.log2_granule = 3;
}
}  // namespace

TEST_CASE("backends: Barrier path lengths of the default variants are the hand-counted ones", "[backends][paths]") {
  BarrierDescriptor desc;
  seed_space(desc);
  EmitterConfig cfg;  // field / racy / desc
  Result<BarrierPaths> a = barrier_paths(asmjit::Arch::kAArch64, cfg, desc);
  REQUIRE(a.ok());
  CHECK(a->hit == 3);            // ldr, cmp, b.eq
  CHECK(a->out_of_range == 8);   // + ldr, sub, ldr, cmp, b.hs
  CHECK(a->mark == 17);          // + str; ldr, add, ubfx, mov, lsl; ldrb, orr, strb
  CHECK(a->mark_bit_set == 17);  // racy marks do not look at the bit
  CHECK(a->emitted == 17);
  Result<BarrierPaths> x = barrier_paths(asmjit::Arch::kX64, cfg, desc);
  REQUIRE(x.ok());
  CHECK(x->hit == 2);            // cmp, je
  CHECK(x->out_of_range == 6);   // + mov, sub, cmp, jae
  CHECK(x->mark == 15);          // + mov; mov, shr, add, shr, and, xor, bts; or
  CHECK(x->emitted == 15);
  // Without a cache there is no hit path.
  cfg.cache = CacheLocation::kNone;
  Result<BarrierPaths> none = barrier_paths(asmjit::Arch::kAArch64, cfg, desc);
  REQUIRE(none.ok());
  CHECK(none->hit == -1);
  CHECK(none->out_of_range == 5);
  CHECK(none->mark == 13);
}

TEST_CASE("backends: Barrier path lengths are consistent for every variant on both architectures", "[backends][paths]") {
  BarrierDescriptor desc;
  seed_space(desc);
  for (const EmitterConfig& base : all_emitter_configs()) {
    for (A64Atomics atomics : {A64Atomics::kLse, A64Atomics::kExclusive}) {
      EmitterConfig cfg = base;
      cfg.a64_atomics = atomics;
      for (asmjit::Arch arch : {asmjit::Arch::kX64, asmjit::Arch::kAArch64}) {
        for (bool desc_reg : {true, false}) {
          INFO(cfg.name() << (arch == asmjit::Arch::kX64 ? " x86_64" : " arm64") << (desc_reg ? "" : " baked"));
          Result<BarrierPaths> p = barrier_paths(arch, cfg, desc, desc_reg);
          REQUIRE(p.ok());
          // Every path runs at most the whole sequence, plus nothing: no loops are taken.
          CHECK(p->mark <= p->emitted);
          CHECK(p->out_of_range < p->mark);
          CHECK(p->mark_bit_set <= p->mark);
          CHECK((p->mark_bit_set < p->mark) ==
                (cfg.mark == MarkMode::kAtomicTestFirst || cfg.mark == MarkMode::kRacyTestFirst));
          if (cfg.uses_cache()) {
            CHECK(p->hit > 0);
            CHECK(p->hit < p->mark);
            // Cache first: a hit is cheaper than a range-check rejection; range first: dearer.
            if (cfg.range_first) CHECK(p->hit > p->out_of_range);
            else CHECK(p->hit < p->out_of_range);
          } else {
            CHECK(p->hit == -1);
          }
          // The emitted count matches the logger's listing.
          objprof::backends::test::Listing l;
          if (arch == asmjit::Arch::kX64) {
            X86BarrierRegs regs = X86BarrierRegs::sysv(asmjit::x86::rdx);
            if (desc_reg) regs.desc = asmjit::x86::rsi;
            l = objprof::backends::test::x86_listing(cfg, desc, regs);
          } else {
            A64BarrierRegs regs = A64BarrierRegs::art(asmjit::a64::x1);
            if (desc_reg) regs.desc = asmjit::a64::x2;
            l = objprof::backends::test::a64_listing(cfg, desc, regs);
          }
          CHECK(static_cast<int>(l.lines.size()) == p->emitted);
        }
      }
    }
  }
}

}  // namespace test_barrier_paths
