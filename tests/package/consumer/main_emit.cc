// A JIT using objprof's installed barrier emitters: it compiles one emitted barrier (a
// BarrierThunk of the default variant, field/racy/desc) and runs it beside the C++ barrier on
// the same addresses. Exit status 0 only if both leave the same bitmap and cache.
#include "backends/barrier_thunk.h"

#include <objprof/barrier.h>

#include <cstdio>
#include <cstring>

using namespace objprof;
using namespace objprof::backends;

int main(int argc, char** argv) {
  const char* how = argc > 1 ? argv[1] : "?";
  // The barrier never dereferences the object: the space needs no memory behind it.
  auto space = HeapSpace::make(0x10000000, 0x10000000 + (1 << 16), 8, "heap");
  auto jit_bitmap = AccessBitmap::create(*space);
  auto cpp_bitmap = AccessBitmap::create(*space);
  if (!jit_bitmap.ok() || !cpp_bitmap.ok()) return std::fprintf(stderr, "bitmaps failed\n"), 1;
  ThreadState jit_thread(1, "jit"), cpp_thread(2, "cpp");
  asmjit::JitRuntime rt;
  Result<BarrierThunk> thunk = BarrierThunk::compile(rt, EmitterConfig{}, (*jit_bitmap)->descriptor(), ThunkKind::kSingle);
  if (!thunk.ok()) return std::fprintf(stderr, "emit: %s\n", thunk.error().message.c_str()), 1;

  const Address objs[] = {0x10000040, 0x10000040, 0, 0x10010000, 0x10000008, 0x1000fff8, 0x0fffffff};
  for (Address obj : objs) {
    thunk->single()(&jit_thread, &(*jit_bitmap)->descriptor(), obj);
    access<DefaultBarrier>(cpp_thread, **cpp_bitmap, obj);
  }
  const bool ok = std::memcmp((*jit_bitmap)->descriptor().bitmap.load(), (*cpp_bitmap)->descriptor().bitmap.load(),
                              (*jit_bitmap)->size_bytes()) == 0 &&
                  (*jit_bitmap)->count() == 3 && jit_thread.cache.load() == cpp_thread.cache.load();
  std::printf("%s emit consumer: %s\n", how, ok ? "ok" : "WRONG: the emitted barrier differs from the C++ barrier");
  return ok ? 0 : 1;
}
