// A tiny "runtime" embedding objprof through its installed headers only: one heap space, a
// thread, a large object that is never touched again and one that is touched every epoch.
// After GC_K collections exactly the first must be reported. Exit status 0 only then.
#include <objprof/objprof.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

using namespace objprof;

int main(int argc, char** argv) {
  const char* how = argc > 1 ? argv[1] : "?";
  constexpr std::size_t kHeap = 1 << 20;
  std::unique_ptr<std::byte[]> heap(new std::byte[kHeap + 4096]);
  const Address base = (reinterpret_cast<Address>(heap.get()) + 4095) & ~Address{4095};

  std::vector<LeakReport> leaks;
  ProfilerOptions opt;
  opt.stale_after_epochs = 3;
  opt.stale_after_bytes = 0;  // GC_K alone: the epochs here are not a program's progress
  opt.min_tracked_size = 1024;
  opt.on_leak = [&](const LeakReport& r) { leaks.push_back(r); };
  auto created = Profiler::create(std::move(opt));
  if (!created.ok()) return std::fprintf(stderr, "create: %s\n", created.error().message.c_str()), 1;
  Profiler& prof = **created;
  auto space = HeapSpace::make(base, base + kHeap, 8, "heap");
  if (!space.ok() || !prof.add_space(*space).ok()) return std::fprintf(stderr, "add_space failed\n"), 1;
  if (!prof.define_type({1, "Cache", 4096, false}).ok() || !prof.define_site({1, 0, "Server.init", 7}).ok())
    return std::fprintf(stderr, "definitions failed\n"), 1;
  ThreadState* self = *prof.attach_thread(1, "main");
  const BarrierDescriptor& d = prof.barrier_descriptor(0);

  const Address leaked = base, used = base + 8192;
  prof.on_alloc(*self, 1, 1, leaked, 4096);
  prof.on_alloc(*self, 1, 1, used, 4096);
  for (int gc = 0; gc < 5; ++gc) {
    access<DefaultBarrier>(*self, d, used);
    if (!prof.gc_begin(GcKind::kFull).ok() || !prof.gc_end().ok()) return std::fprintf(stderr, "gc failed\n"), 1;
  }
  prof.detach_thread(*self);
  if (!prof.finish().ok()) return std::fprintf(stderr, "finish failed\n"), 1;

  for (const LeakReport& r : leaks) std::printf("%s: %s\n", how, format_leak(r).c_str());
  const bool ok = leaks.size() == 1 && leaks[0].addr == leaked && leaks[0].type_name == "Cache" &&
                  leaks[0].method == "Server.init";
  std::printf("%s consumer: %s\n", how, ok ? "ok" : "WRONG leak report");
  return ok ? 0 : 1;
}
