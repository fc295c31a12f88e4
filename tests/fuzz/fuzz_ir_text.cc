// Fuzz target: IR text -> parser -> verifier -> every elimination pass (+ the path checker),
// and the printer's round trip: what the parser accepts and the printer prints parses again
// to the same module.
#include "ir_passes.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace objprof;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto m = ir::parse_module(text, "fuzz.ir");
  if (!m.ok()) return 0;
  const std::string printed = ir::print_module(*m);
  auto again = ir::parse_module(printed, "printed.ir");
  OBJPROF_FUZZ_CHECK(again.ok());
  OBJPROF_FUZZ_CHECK(*again == *m);
  fuzz::run_passes(*m);
  return 0;
}
