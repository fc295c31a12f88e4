// Fuzz target: a class file, or a .jar/.jmod archive of them (input starting "PK" or "JM"),
// -> JVM importer -> verifier -> every elimination pass (+ the path checker). A method the
// importer accepts must print, parse back to itself, and verify.
#include "ir_passes.h"

#include <objprof/ir/class_archive.h>
#include <objprof/ir/jvm_import.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace {

void import_one(std::string_view bytes) {
  using namespace objprof;
  auto r = ir::import_class(bytes);
  if (!r.ok()) return;
  const std::string printed = ir::print_module(r->module);
  auto back = ir::parse_module(printed, "imported.ir");
  if (!back.ok()) std::fprintf(stderr, "%s\n--- printed module:\n%s\n", back.error().message.c_str(), printed.c_str());
  OBJPROF_FUZZ_CHECK(back.ok());
  OBJPROF_FUZZ_CHECK(*back == r->module);
  objprof::fuzz::run_passes(r->module);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (bytes.starts_with("PK") || bytes.starts_with("JM")) {
    auto entries = objprof::ir::read_class_archive_bytes(bytes, "fuzz.jar");
    if (!entries.ok()) return 0;
    for (const auto& e : *entries) import_one(e.bytes);
    return 0;
  }
  import_one(bytes);
  return 0;
}
